"""Projects in the sidebar: shared by every tab of the person, and each tab's own open groups.

:class:`SharedProjectsState` is linked to the person's token (``user-<id>``), as the chat list
is: a change made in one tab (a project created, renamed, deleted; a chat moved in or out; a
new chat started inside a project) is re-read into it and reaches every linked tab. Changes
made elsewhere (a file added, the ``chats projects`` CLI, another worker, a chat of a project
renamed) reach it through the live bridge, which re-reads it (``reload``).

Per tab (:class:`ProjectsTabState`): the open dialogs, a project's file upload (read as an
attachment is: the same limits and errors) and the undo of a project deleted with its chats.
"""

from __future__ import annotations

import asyncio
import dataclasses

import reflex as rx

from backend.errors import ChatsError
from backend.uploads import (
    IMAGE_TYPES,
    accepted_extensions,
    attachment_limits,
    format_size,
    read_attachment,
)
from chatsapp.auth.identity import current_user_id
from chatsapp.chat_route import chat_path
from chatsapp.services import offload, services
from chatsapp.states.directory import UNDO_SECONDS
from chatsapp.states.linking import link_to_user_list
from chatsapp.states.page_scripts import upload_chunks
from chatsapp.states.rows import ChatRow, chat_row
from chatsapp.states.server_only import server_only

PROJECT_UPLOAD_ID = "project-file-upload"
# What a project's file picker offers: the composer's document types (a hint; the server
# checks the bytes again and refuses an image).
DOCUMENT_ACCEPT = {
    media: extensions
    for media, extensions in accepted_extensions().items()
    if media not in IMAGE_TYPES
}
DOCUMENT_KINDS = "PDF, text, markdown, code, CSV or JSON"


@dataclasses.dataclass
class ProjectFileRow:
    id: str = ""
    name: str = ""
    size: str = ""  # as a person reads it ("12 KB")


@dataclasses.dataclass
class ProjectRow:
    id: str = ""
    name: str = ""
    instructions: str = ""
    use_personal_memory: bool = True
    chats: list[ChatRow] = dataclasses.field(default_factory=list)
    files: list[ProjectFileRow] = dataclasses.field(default_factory=list)


def _projects():
    return services().projects(current_user_id())


class SharedProjectsState(rx.SharedState):
    """Shared by every tab of one person: their projects, each with its live chats."""

    rows: list[ProjectRow] = []
    member_ids: list[str] = []  # chats in a project: the loose list leaves them out
    project_of_chat: dict[str, str] = {}  # chat id → its project's name (the chat header)
    loaded: bool = False

    @rx.event
    async def link(self) -> None:
        await link_to_user_list(self)

    @server_only
    async def reload(self, user_id: str, *, touch: bool = True) -> None:
        """``touch=False``: the live bridge's read, not the person's use."""
        projects = services().projects(user_id, touch=touch)

        def read() -> list[ProjectRow]:
            return [
                ProjectRow(
                    p.id,
                    p.name,
                    p.instructions,
                    p.use_personal_memory,
                    [chat_row(s) for s in projects.chats_of(p.id)],
                    [
                        ProjectFileRow(f.id, f.name, format_size(f.size))
                        for f in projects.files.list_files(p.id)
                    ],
                )
                for p in projects.list_projects()
            ]

        rows = await offload(read)
        self.rows = rows
        self.member_ids = [chat.id for row in rows for chat in row.chats]
        self.project_of_chat = {chat.id: row.name for row in rows for chat in row.chats}
        self.loaded = True

    async def _act(self, what: str, fn, *args):  # noqa: ANN001
        """Run one change, then re-read for every linked tab; a refusal becomes a toast."""
        try:
            result = await offload(fn, *args)
        except (ChatsError, KeyError, ValueError) as exc:
            return None, rx.toast.error(f"Could not {what}: {exc}")
        await self.reload(current_user_id())
        return result, None

    @rx.event
    async def create_project(self, form_data: dict[str, object]):  # noqa: ANN201
        name = form_data.get("name")
        instructions = form_data.get("instructions") or ""
        _, refusal = await self._act(
            "create the project",
            lambda: _projects().create(name, instructions=instructions),
        )
        return refusal

    @rx.event
    async def save_project(self, form_data: dict[str, object]):  # noqa: ANN201
        """The project form: its id, name, instructions and the personal-memory switch."""
        project_id = str(form_data.get("project_id") or "")
        name, instructions = form_data.get("name"), form_data.get("instructions") or ""
        personal = form_data.get("use_personal_memory") in ("on", True, "true")

        def save() -> None:
            projects = _projects()
            projects.rename(project_id, name)
            projects.set_instructions(project_id, instructions)
            projects.set_use_personal_memory(project_id, personal)

        _, refusal = await self._act("save the project", save)
        return refusal

    @rx.event
    async def move_chat(self, chat_id: str, project_id: str):  # noqa: ANN201
        """Move a chat into ``project_id`` ("" takes it out of its project)."""
        _, refusal = await self._act(
            "move the chat", lambda: _projects().move_chat(chat_id, project_id or None)
        )
        return refusal

    @rx.event
    async def drop_chat(self, form_data: dict[str, object]):  # noqa: ANN201
        """A chat dragged onto a project, or out of one onto the loose chats (an empty project
        id): ``assets/projects_drag.js`` submits the ids."""
        chat_id, project_id = form_data.get("chat_id"), form_data.get("project_id", "")
        if not isinstance(chat_id, str) or not chat_id or not isinstance(project_id, str):
            return None
        return await self.move_chat(chat_id, project_id)

    @rx.event
    async def remove_file(self, file_id: str):  # noqa: ANN201
        _, refusal = await self._act("remove the file", lambda: _projects().files.remove(file_id))
        return refusal

    @rx.event
    async def new_chat_in(self, project_id: str):  # noqa: ANN201
        summary, refusal = await self._act(
            "start a chat in the project", lambda: _projects().create_chat(project_id)
        )
        return refusal if summary is None else rx.redirect(chat_path(summary.id))


class ProjectsTabState(rx.State):
    """Per tab: which groups are folded, the new-project form, the project being edited or
    deleted (its dialog), the chat being moved (its picker)."""

    folded: list[str] = []
    moving_id: str = ""  # the chat whose "Move to project…" picker is open
    moving_title: str = ""
    creating: bool = False
    editing_id: str = ""
    deleting_id: str = ""
    deleting_name: str = ""
    undo_project_id: str = ""  # a project deleted with its chats, while its undo is offered
    undo_name: str = ""

    @rx.event
    def toggle(self, project_id: str) -> None:
        if project_id in self.folded:
            self.folded = [p for p in self.folded if p != project_id]
        else:
            self.folded = [*self.folded, project_id]

    @rx.event
    def set_creating(self, value: bool) -> None:
        self.creating = value

    @rx.event
    def edit(self, project_id: str) -> None:
        self.editing_id = project_id

    @rx.event
    def ask_delete(self, project_id: str, name: str) -> None:
        self.deleting_id, self.deleting_name = project_id, name

    @rx.event
    def start_move(self, chat_id: str, title: str) -> None:
        """A chat row's "Move to project…": the picker opens above the projects."""
        self.moving_id, self.moving_title = chat_id, title

    @rx.event
    def close_dialogs(self) -> None:
        self.editing_id, self.deleting_id, self.creating = "", "", False
        self.moving_id = ""

    # ── delete, with one undo for a project deleted with its chats ──

    @rx.event
    async def delete_project(self, project_id: str, chats: str, name: str):  # noqa: ANN201
        """Delete a project; ``chats`` is the person's choice: "move_out" or "delete"."""
        self.deleting_id = ""
        try:
            await offload(_projects().delete, project_id, chats)
        except (ChatsError, KeyError, ValueError) as exc:
            return rx.toast.error(f"Could not delete the project: {exc}")
        if chats != "delete":
            return None
        self.undo_project_id, self.undo_name = project_id, name
        return ProjectsTabState.expire_undo(project_id)

    @rx.event(background=True)
    async def expire_undo(self, project_id: str) -> None:
        await asyncio.sleep(UNDO_SECONDS)
        async with self:
            if self.undo_project_id == project_id:
                self.undo_project_id = ""

    @rx.event
    async def undo_delete(self):  # noqa: ANN201
        """The project and every chat its deletion deleted come back."""
        project_id, self.undo_project_id = self.undo_project_id, ""
        if not project_id:
            return None
        try:
            await offload(_projects().restore, project_id)
        except (ChatsError, KeyError) as exc:
            return rx.toast.error(f"Could not restore the project: {exc}")
        return None

    # ── a project's files ───────────────────────────────────────────

    @rx.var(cache=True)
    def file_limit_bytes(self) -> int:
        """The per-file limit, for the picker to refuse larger files before uploading."""
        return services().settings.max_attachment_bytes

    @rx.event
    async def upload_file(self, files: list[rx.UploadFile]):  # noqa: ANN201
        """Add the files to the project whose form is open, each read as an attachment is
        (stopped at the limit, its type from its bytes); a refused one is named with why."""
        project_id = self.editing_id
        if not project_id:
            return rx.toast.error("Open a project's form to add files to it.")
        limits = attachment_limits(services().settings)
        projects = _projects()
        added = []
        for file in files:
            name = file.name or "file"
            try:
                upload = await read_attachment(name, upload_chunks(file), limits)
                stored = await offload(projects.files.add_upload, project_id, upload)
            except ChatsError as exc:
                return rx.toast.error(f"{exc} Not added.")
            added.append(stored.name)
        return rx.toast.success(f"Added {', '.join(added)}.") if added else None
