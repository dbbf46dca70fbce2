"""Shared memory blocks: shown and edited in a panel, live in every tab of the user."""

from __future__ import annotations

import reflex as rx

from backend.errors import ChatsError
from chatsapp.identity import current_user_id, directory_token
from chatsapp.services import offload, services
from chatsapp.states.rows import MemoryRow
from chatsapp.states.server_only import server_only

DEFAULT_LABEL = "user_memory"


class SharedMemoryState(rx.SharedState):
    """Shared by every tab of one user (linked to ``user-<id>``): their memory blocks."""

    blocks: list[MemoryRow] = []
    loaded: bool = False

    @rx.event
    async def link(self) -> None:
        user_id = current_user_id()
        linked = await self._link_to(directory_token(user_id))
        if not linked.loaded:
            await linked.reload(user_id)

    @server_only
    async def reload(self, user_id: str) -> None:
        chats = services().directory(user_id)
        blocks = await offload(chats.list_shared_contexts)
        labels = dict(blocks)
        labels.setdefault(DEFAULT_LABEL, "")
        self.blocks = [MemoryRow(label, content) for label, content in sorted(labels.items())]
        self.loaded = True


class MemoryEditorTabState(rx.State):
    """Per tab: whether the panel is open, which block is being edited, the draft text."""

    open: bool = False
    label: str = DEFAULT_LABEL
    draft: str = ""
    append_text: str = ""
    editing: bool = False

    def _chats(self):
        return services().directory(current_user_id())

    @rx.event
    def toggle(self) -> None:
        self.open = not self.open

    @rx.event
    def start_edit(self, label: str, content: str) -> None:
        self.label, self.draft, self.editing = label, content, True

    @rx.event
    def set_draft(self, value: str) -> None:
        self.draft = value

    @rx.event
    def set_append_text(self, value: str) -> None:
        self.append_text = value

    @rx.event
    def cancel(self) -> None:
        self.editing = False

    @rx.event
    async def save(self):  # noqa: ANN201
        chats = self._chats()
        try:
            await offload(chats.set_shared_context, self.label, self.draft)
        except (ChatsError, ValueError) as exc:
            return rx.toast.error(f"Could not save memory: {exc}")
        self.editing = False
        return None

    @rx.event
    async def append(self, label: str):  # noqa: ANN201
        text = self.append_text.strip()
        if not text:
            return None
        chats = self._chats()
        try:
            await offload(chats.append_shared_context, label, f"- {text}\n")
        except (ChatsError, ValueError) as exc:
            return rx.toast.error(f"Could not add to memory: {exc}")
        self.append_text = ""
        return None
