"""The sidebar: the user's chat list (shared by all their tabs) and per-tab sidebar UI state."""

from __future__ import annotations

import asyncio

import reflex as rx

from backend.errors import ChatsError
from chatsapp.identity import current_user_id, directory_token
from chatsapp.services import offload, services
from chatsapp.states.rows import ChatRow, chat_row

PAGE_SIZE = 40
UNDO_SECONDS = 8.0


class SharedDirectoryState(rx.SharedState):
    """Shared by every tab of one user (linked to ``user-<id>``): the chat list's first page.

    Written by this state's handlers and by the bridge (``chatsapp.bridge``) when the directory
    reports a change, so edits made anywhere (another tab, a generated title, a finished
    reply bumping the order) appear in every tab without a reload.
    """

    chats: list[ChatRow] = []
    loaded: bool = False

    @rx.event
    async def link(self) -> None:
        user_id = current_user_id()
        linked = await self._link_to(directory_token(user_id))
        if not linked.loaded:
            await linked.reload(user_id)

    async def reload(self, user_id: str) -> None:
        summaries = await offload(services().directory(user_id).list_chats, limit=PAGE_SIZE)
        self.chats = [chat_row(s) for s in summaries]
        self.loaded = True


class SidebarTabState(rx.State):
    """Per tab: further pages, inline rename, the undo bar (searches: ``SearchTabState``).

    Each tab scrolls on its own; only the first page of the list is shared.
    """

    more_chats: list[ChatRow] = []
    has_more: bool = True
    loading_more: bool = False
    editing_id: str = ""
    edit_title: str = ""
    undo_chat_id: str = ""
    undo_title: str = ""
    collapsed: bool = False

    def _chats(self):
        return services().directory(current_user_id())

    # ── create ──────────────────────────────────────────────────────

    @rx.event
    async def create_chat(self):  # noqa: ANN201
        summary = await offload(self._chats().create_chat)
        return rx.redirect(f"/chat/{summary.id}")

    # ── infinite scroll ─────────────────────────────────────────────

    @rx.event
    async def load_more(self) -> None:
        if self.loading_more or not self.has_more:
            return
        directory = await self.get_state(SharedDirectoryState)
        shown = directory.chats + self.more_chats
        if len(shown) < PAGE_SIZE:
            self.has_more = False
            return
        self.loading_more = True
        last = shown[-1]
        # (updated_at, id) is a tie-stable cursor: chats updated in the same ms are not skipped.
        cursor = (last.updated_at, last.id)
        page = await offload(self._chats().list_chats, limit=PAGE_SIZE, before=cursor)
        known = {row.id for row in shown}
        self.more_chats = self.more_chats + [chat_row(s) for s in page if s.id not in known]
        self.has_more = len(page) == PAGE_SIZE
        self.loading_more = False

    # ── rename ──────────────────────────────────────────────────────

    @rx.event
    def start_rename(self, chat_id: str, title: str) -> None:
        self.editing_id = chat_id
        self.edit_title = title

    @rx.event
    def set_edit_title(self, value: str) -> None:
        self.edit_title = value

    @rx.event
    def cancel_rename(self) -> None:
        self.editing_id = ""

    @rx.event
    async def commit_rename(self):  # noqa: ANN201
        chat_id, title = self.editing_id, self.edit_title
        self.editing_id = ""
        if not chat_id:
            return None
        try:
            await offload(self._chats().rename_chat, chat_id, title)
        except (ChatsError, ValueError, KeyError) as exc:
            return rx.toast.error(f"Could not rename: {exc}")
        return None

    @rx.event
    async def rename_key(self, key: str):  # noqa: ANN201
        if key == "Enter":
            return await self.commit_rename()
        if key == "Escape":
            self.cancel_rename()
        return None

    # ── delete with undo ────────────────────────────────────────────

    @rx.event
    async def delete_chat(self, chat_id: str, title: str):  # noqa: ANN201
        await offload(self._chats().delete_chat, chat_id)
        self.more_chats = [row for row in self.more_chats if row.id != chat_id]
        self.undo_chat_id, self.undo_title = chat_id, title
        return SidebarTabState.expire_undo(chat_id)

    @rx.event(background=True)
    async def expire_undo(self, chat_id: str) -> None:
        await asyncio.sleep(UNDO_SECONDS)
        async with self:
            if self.undo_chat_id == chat_id:
                self.undo_chat_id = ""

    @rx.event
    async def undo_delete(self):  # noqa: ANN201
        chat_id, self.undo_chat_id = self.undo_chat_id, ""
        if not chat_id:
            return None
        try:
            await offload(self._chats().restore_chat, chat_id)
        except (ChatsError, KeyError) as exc:
            return rx.toast.error(f"Could not restore the chat: {exc}")
        return rx.redirect(f"/chat/{chat_id}")

    @rx.event
    def toggle_sidebar(self) -> None:
        self.collapsed = not self.collapsed
