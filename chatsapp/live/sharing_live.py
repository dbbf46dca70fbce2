"""Shared chats, live: memberships, presence and removals reach every open tab at once.

One :class:`SharingLive` per worker process, built by the app module beside the
:class:`~chatsapp.live.bridge.LiveBridge` (whose tab bookkeeping it reads and whose watch
changes it hears). It imports no state module: the app module hands it the states it writes.

* **The sharing change feed** (``Sharing.changes_since``), read when
  :mod:`chatsapp.live.sharing_wakeups` says something changed (at once after a commit here or
  another worker's announcement on Redis; a fallback read each second only while this process
  serves a tab): each process updates the tabs it serves. A person named by an entry gets
  their "Shared with me" list re-read; a chat named gets its member list re-read; a person
  who **lost** a chat (removed, left, the owner deleted or ended it) has each of their tabs
  here that shows it emptied at once: the tab's
  shared views of that chat are linked to :data:`LOST_TOKEN` (nothing is ever written there),
  so the chat's later frames are not sent to it, what it showed is replaced by empty values,
  and a reconnecting socket hydrates nothing of it; the tab shows why.
* **Presence**: the bridge reports each tab that starts or stops watching a chat; the chat's
  shared people state counts them per username (under its lock, so processes on Redis add up).
* **Renames**: an owner's rename re-reads the "Shared with me" list of the chat's members
  with a tab here (the open chat's title follows through the transcript's shared state).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

import reflex as rx

from backend.errors import ChatsError
from backend.sharing import ChatRef, Sharing, SharingChange
from chatsapp.auth.identity import conversation_token, directory_token
from chatsapp.live.bridge import Key, LiveBridge
from chatsapp.live.fanout import shared_change
from chatsapp.live.sharing_wakeups import FeedWakeups
from chatsapp.reflex_seam import ReflexApp, link_to, redis_of
from chatsapp.services import Services, offload

log = logging.getLogger(__name__)

LOST_TOKEN = "conv-lost"
"""Where a tab's views of a chat it lost are linked: a token nothing writes (not a chat id)."""
LOST_NOTICES = {
    "removed": "The owner removed you from this chat.",
    "left": "You left this chat.",
    "chat_deleted": "The owner deleted this chat.",
    "chat_ended": "This chat no longer exists.",
    "account_ended": "This chat is no longer shared with you.",
}


@dataclass(frozen=True)
class SharingStates:
    """What the live layer writes (each needs the fields and methods it uses)."""

    tab: type[rx.State]  # per tab: ``lose_chat(notice)``
    shared_with_me: type[rx.State]  # on ``user-<id>``: ``reload(user_id)``, ``loaded``
    people: type[rx.State]  # on ``conv-<chat>``: ``reload(owner_id)``, ``count_viewer``
    chat_views: tuple[type[rx.State], ...]  # every shared state a tab links to ``conv-<chat>``


class SharingLive:
    """The sharing side of the live layer of one worker process (module docstring)."""

    def __init__(
        self, app: ReflexApp, bridge: LiveBridge, states: SharingStates, services: Services
    ) -> None:
        self.app = app
        self.bridge = bridge
        self.states = states
        self.services = services
        self.wakeups: FeedWakeups | None = None  # made on the loop by :meth:`follow_feed`
        self._usernames: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def install(self) -> None:
        self.bridge.watch_listener = self

    async def follow_feed(self) -> None:
        """Follow the feed until cancelled (the app's lifespan task)."""
        sharing = await offload(self.services.sharing)
        self.wakeups = FeedWakeups(lambda: self.bridge.serves_anyone(), redis_of(self.app))
        unsubscribe = sharing.subscribe(self.wakeups.committed_here)
        try:
            await self._follow(sharing, self.wakeups)
        finally:
            unsubscribe()
            await self.wakeups.aclose()

    async def _follow(self, sharing: Sharing, wakeups: FeedWakeups) -> None:
        cursor = await offload(sharing.change_cursor)
        while True:
            await wakeups.wait()
            try:
                changes = await offload(sharing.changes_since, cursor)
                cursor = changes.cursor
                if changes.gap:
                    await self._everyone_here()
                for change in changes.changes:
                    await self.apply(change)
            except Exception:  # the next poll tries again
                log.warning("sharing feed poll failed", exc_info=True)

    async def apply(self, change: SharingChange) -> None:
        """One entry of the feed, for the tabs this process serves."""
        key: Key = (change.owner_id, change.chat_id)
        if change.lost:
            notice = LOST_NOTICES.get(change.kind, LOST_NOTICES["account_ended"])
            for client_token in self.bridge.tabs_watching(key):
                if self.bridge.tab_owner(client_token) == change.user_id:
                    await self.lose_chat(client_token, key, notice)
        if self.bridge.has_tabs(change.user_id):
            await self._reload_shared_with_me(change.user_id)
        if self.bridge.tabs_watching(key):
            await self._reload_people(change.chat)

    async def lose_chat(self, client_token: str, key: Key, notice: str) -> None:
        """Tab ``client_token`` keeps nothing of chat ``key`` and shows ``notice``."""
        token = rx.BaseStateToken(ident=client_token, cls=self.states.tab)
        async with self.app.modify_state(token) as root:
            for view in self.states.chat_views:
                await link_to(await root.get_state(view), LOST_TOKEN)
            tab: Any = await root.get_state(self.states.tab)
            tab.lose_chat(notice)
        self.bridge.tab_left_chat(client_token)

    # ── what the bridge reports (``chatsapp.live.bridge.WatchListener``) ──

    def watched(self, client_token: str, key: Key, change: int) -> None:
        viewer = self.bridge.tab_owner(client_token) or key[0]
        self._spawn(self._count(viewer, key[1], change))

    def chat_renamed(self, owner_id: str, chat_id: str) -> None:
        self._spawn(self._members_renamed(ChatRef(owner_id=owner_id, chat_id=chat_id)))

    # ── writes ──────────────────────────────────────────────────────

    async def _count(self, user_id: str, chat_id: str, change: int) -> None:
        name = await self._username(user_id)
        async with shared_change(
            self.app, conversation_token(chat_id), self.states.people
        ) as people:
            people.count_viewer(name, change)

    async def _username(self, user_id: str) -> str:
        name = self._usernames.get(user_id)
        if name is None:
            user = await offload(self.services.accounts().user, user_id)
            name = user.username if user is not None else user_id
            if len(self._usernames) > 10_000:
                self._usernames.clear()
            self._usernames[user_id] = name
        return name

    async def _reload_shared_with_me(self, user_id: str) -> None:
        token = directory_token(user_id)
        async with shared_change(self.app, token, self.states.shared_with_me) as shared:
            await shared.reload(user_id)

    async def _reload_people(self, chat: ChatRef) -> None:
        token = conversation_token(chat.chat_id)
        async with shared_change(self.app, token, self.states.people) as people:
            with contextlib.suppress(ChatsError):
                await people.reload(chat.owner_id)

    async def _members_renamed(self, chat: ChatRef) -> None:
        sharing = self.services.sharing()
        members = await offload(sharing.participant_ids, chat)
        for member in members[1:]:
            if self.bridge.has_tabs(member):
                await self._reload_shared_with_me(member)

    async def _everyone_here(self) -> None:
        """Behind the feed's retention: re-read every list this process shows."""
        for user_id in self.bridge.people_with_tabs():
            await self._reload_shared_with_me(user_id)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        with contextlib.suppress(RuntimeError):  # no loop: nothing is served yet
            task = asyncio.get_running_loop().create_task(coro, context=contextvars.Context())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
