"""The sidebar's two searches (chat titles, every message), run as the user types.

Each keystroke handler only records the query; the search itself runs in a background task
(``chatsapp.states.newest``): one at a time per search and tab, ending on the newest query,
and never holding this tab's state lock while SQLite works.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

import reflex as rx
from reflex.event import EventHandler

from backend.chats import Chats, ChatSummary, split_snippet
from backend.errors import ChatsError
from backend.sharing import MessageHit
from chatsapp.auth.identity import current_user_id
from chatsapp.services import offload, services
from chatsapp.states.newest import search_is_running, search_newest
from chatsapp.states.rows import ChatRow, HitRow, SnippetPiece, chat_row
from chatsapp.states.server_only import server_only

MESSAGE_HITS_SHOWN = 30
ARCHIVED_RESULTS_SHOWN = 50

# A search's outcome: the rows to show and an error sentence ("" when it worked).
Outcome = tuple[list[Any], str]


class SearchTabState(rx.State):
    """Per tab: what this tab searches for and what it found; other tabs are unaffected."""

    title_query: str = ""
    title_results: list[ChatRow] = []
    message_query: str = ""
    message_hits: list[HitRow] = []
    message_search_open: bool = False
    archived_query: str = ""
    archived_results: list[ChatRow] = []
    search_error: str = ""
    # Wall-clock start of the running search loop of each kind (0 = none is running).
    _title_search_since: float = 0.0
    _message_search_since: float = 0.0
    _archived_search_since: float = 0.0

    def _chats(self) -> Chats:
        return services().directory(current_user_id())

    # ── keystrokes (quick: they never wait for a search) ────────────

    @rx.event
    def set_title_query(self, value: str) -> EventHandler | None:
        self.title_query = value
        if not value.strip():
            self.title_results, self.search_error = [], ""
            return None
        if self._claim("_title_search_since"):
            return SearchTabState.search_titles
        return None  # the running search picks the new query up when it ends

    @rx.event
    def set_archived_query(self, value: str) -> EventHandler | None:
        """The "Archived" section's own filter: archived chats whose title matches."""
        self.archived_query = value
        if not value.strip():
            self.archived_results, self.search_error = [], ""
            return None
        if self._claim("_archived_search_since"):
            return SearchTabState.search_archived
        return None

    @server_only
    def archive_changed(self, chat_id: str, archived: bool) -> None:
        """This tab (un)archived a chat: its results here say so at once (others: next search)."""
        if not archived and any(r.id == chat_id for r in self.archived_results):
            self.archived_results = [r for r in self.archived_results if r.id != chat_id]
        if any(r.id == chat_id and r.archived != archived for r in self.title_results):
            self.title_results = [
                dataclasses.replace(r, archived=archived) if r.id == chat_id else r
                for r in self.title_results
            ]

    @rx.event
    def set_message_query(self, value: str) -> EventHandler | None:
        self.message_query = value
        return self._start_message_search()

    @rx.event
    def run_message_search(self) -> EventHandler | None:
        """Enter in the box: search again now (new messages may have arrived)."""
        return self._start_message_search()

    def _start_message_search(self) -> EventHandler | None:
        if not self.message_query.strip():
            self.message_hits, self.search_error = [], ""
            return None
        if self._claim("_message_search_since"):
            return SearchTabState.search_messages
        return None

    @rx.event
    def toggle_message_search(self) -> None:
        self.message_search_open = not self.message_search_open

    def _claim(self, flag: str) -> bool:
        """Become the one search loop of this kind, unless one is already running."""
        now = time.time()
        if search_is_running(getattr(self, flag), now):
            return False
        setattr(self, flag, now)
        return True

    # ── the searches (background: the state lock is held only to read and show) ──

    @rx.event(background=True)
    async def search_titles(self) -> None:
        chats = self._chats()

        async def search(query: str) -> list[ChatRow]:
            return [chat_row(s) for s in await offload(chats.search_chats, query)]

        await self._search_newest("title_query", "title_results", "_title_search_since", search)

    @rx.event(background=True)
    async def search_archived(self) -> None:
        chats = self._chats()

        async def search(query: str) -> list[ChatRow]:
            found = await offload(
                chats.list_chats, archived=True, search=query, limit=ARCHIVED_RESULTS_SHOWN
            )
            return [chat_row(s) for s in found]

        await self._search_newest(
            "archived_query", "archived_results", "_archived_search_since", search
        )

    @rx.event(background=True)
    async def search_messages(self) -> None:
        chats = self._chats()
        user_id = current_user_id()

        async def search(query: str) -> list[HitRow]:
            return await offload(_hit_rows, chats, user_id, query)

        await self._search_newest("message_query", "message_hits", "_message_search_since", search)

    async def _search_newest(
        self,
        query_var: str,
        results_var: str,
        flag: str,
        search: Callable[[str], Awaitable[list[Any]]],
    ) -> None:
        async def take(searched: str | None) -> str | None:
            async with self:
                query = getattr(self, query_var)
                if query == searched or not query.strip():
                    setattr(self, flag, 0.0)  # released under the lock that read the query
                    return None
                return query

        async def attempt(query: str) -> Outcome:
            try:
                return await search(query), ""
            except (ChatsError, ValueError) as exc:  # e.g. a query over the backend's cap
                return [], f"Could not search: {exc}"

        async def show(query: str, outcome: Outcome) -> None:
            async with self:
                if query == getattr(self, query_var):  # else a newer query is on its way
                    setattr(self, results_var, outcome[0])
                    self.search_error = outcome[1]

        try:
            await search_newest(take, attempt, show)
        except BaseException:
            async with self:  # a failed loop must not block this tab's searches
                setattr(self, flag, 0.0)
            raise


def _hit_rows(chats: Chats, user_id: str, query: str) -> list[HitRow]:
    """Message hits with their chat's title, the chats shared with the person included and
    labelled with their owner (one synchronous pass, run on a worker thread)."""
    hub = services()
    person = hub.accounts().user(user_id)
    if person is None:  # no account (one person's folder): nothing is shared
        hits = [
            MessageHit(**hit.model_dump())
            for hit in chats.search_messages(query, limit=MESSAGE_HITS_SHOWN)
        ]
    else:
        hits = hub.sharing().search_messages(
            person,
            chats,
            lambda owner_id: hub.directory(owner_id, touch=False),
            query,
            limit=MESSAGE_HITS_SHOWN,
        )
    summaries: dict[str, ChatSummary] = {}
    for chat_id in dict.fromkeys(hit.chat_id for hit in hits if hit.shared_by is None):
        try:
            summaries[chat_id] = chats.get_summary(chat_id)
        except (KeyError, ValueError):
            continue  # deleted since the search: its hits keep a generic title
    return [
        HitRow(
            chat_id=hit.chat_id,
            message_id=hit.message_id,
            title=_hit_title(hit, summaries),
            pieces=[SnippetPiece(t, is_hit) for t, is_hit in split_snippet(hit.snippet)],
            archived=hit.chat_id in summaries and summaries[hit.chat_id].archived,
            shared_by=hit.shared_by.owner_username if hit.shared_by is not None else "",
        )
        for hit in hits
    ]


def _hit_title(hit: MessageHit, summaries: dict[str, ChatSummary]) -> str:
    if hit.shared_by is not None:
        return hit.shared_by.chat_title or "Chat"
    return summaries[hit.chat_id].title if hit.chat_id in summaries else "Chat"
