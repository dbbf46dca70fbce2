"""Archived chats in the sidebar, and the "archive chats untouched for N days" setting.

The archived list's first page is shared by every tab of the user (``SharedArchiveState``,
linked to ``user-<id>`` like the main list) and re-read by the bridge
(``chatsapp.live.bridge``) after each directory change, so a chat archived in one tab moves
between the lists in all of them. Each tab opens the section and filters it on its own
(``SidebarTabState.archived_open``, ``SearchTabState.archived_query``). The rules (what is
archived, when the policy archives) live in ``backend.chats``; this module only shows them.
"""

from __future__ import annotations

import reflex as rx

from backend.chats import MAX_AUTO_ARCHIVE_DAYS, MIN_AUTO_ARCHIVE_DAYS
from backend.chats.sidebar import ARCHIVED_PAGE, SidebarPage
from backend.errors import ChatsError
from chatsapp.auth.identity import current_user_id
from chatsapp.services import offload, services
from chatsapp.states.linking import link_to_user_list
from chatsapp.states.rows import ChatRow, chat_row
from chatsapp.states.server_only import server_only


class SharedArchiveState(rx.SharedState):
    """Shared by every tab of one user: the newest archived chats (the section's list)."""

    rows: list[ChatRow] = []
    loaded: bool = False

    @rx.event
    async def link(self) -> None:
        await link_to_user_list(self)

    @server_only
    async def reload(self, user_id: str) -> None:
        """Re-read the list; nothing is sent when it did not change (most directory events)."""
        summaries = await offload(
            services().directory(user_id).list_chats, limit=ARCHIVED_PAGE, archived=True
        )
        self._show_rows([chat_row(s) for s in summaries])

    @server_only
    def show(self, page: SidebarPage) -> None:
        """Show the sidebar page's archived chats, if it holds them (the bridge reads it)."""
        if page.archived is not None:
            self._show_rows([chat_row(s) for s in page.archived])

    def _show_rows(self, rows: list[ChatRow]) -> None:
        if rows != self.rows:
            self.rows = rows
        if not self.loaded:
            self.loaded = True


class ArchivePolicyTabState(rx.State):
    """Settings → Archive: "archive chats untouched for N days" (blank: off)."""

    days: str = ""
    saved: str = ""
    error: str = ""
    limits: str = f"{MIN_AUTO_ARCHIVE_DAYS} to {MAX_AUTO_ARCHIVE_DAYS} days"

    @rx.event
    async def load(self) -> None:
        days = await offload(services().directory(current_user_id()).auto_archive_days)
        self.days = self.saved = "" if days is None else str(days)
        self.error = ""

    @rx.event
    def set_days(self, value: str) -> None:
        self.days = value if isinstance(value, str) else str(value)  # save() says what is wrong
        self.error = ""

    @rx.event
    async def save(self):  # noqa: ANN201
        """Save and apply at once: chats already past the limit move to Archived now."""
        text = self.days.strip()
        try:
            days = int(text) if text else None
        except ValueError:
            self.error = f"Enter a whole number of days ({self.limits}), or leave it blank."
            return None
        chats = services().directory(current_user_id())
        try:
            archived = await offload(chats.set_auto_archive_days, days)
        except (ChatsError, ValueError) as exc:
            self.error = f"{str(exc).capitalize()}. Nothing was saved."
            return None
        self.days = self.saved = "" if days is None else str(days)
        self.error = ""
        if days is None:
            return rx.toast.success("Chats are no longer archived automatically.")
        return rx.toast.success(f"Saved. {len(archived)} chat(s) archived now.")
