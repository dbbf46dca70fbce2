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
  shared views of that chat are linked to a token of that tab alone
  (:func:`~chatsapp.auth.identity.solo_token`; nothing is ever written there),
  so the chat's later frames are not sent to it, what it showed is replaced by empty values,
  and a reconnecting socket hydrates nothing of it; the tab shows why.
* **Presence**: the bridge reports each tab that starts or stops watching a chat; the chat's
  shared people state counts them per process and username (under its lock, so processes on
  Redis add up), and while this process has such tabs it renews its lease on the chat every
  ``heartbeat_s``: a process that dies stops renewing, and its tabs leave the header once its
  lease ends (``chatsapp.states.chat_people``).
* **Renames**: an owner's rename re-reads the "Shared with me" list of the chat's members
  with a tab here (the open chat's title follows through the transcript's shared state).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import reflex as rx

from backend.errors import ChatsError
from backend.sharing import ChatRef, Sharing, SharingChange
from chatsapp.auth.identity import conversation_token, directory_token, solo_token
from chatsapp.live.bridge import Key, LiveBridge
from chatsapp.live.fanout import shared_change
from chatsapp.live.sharing_wakeups import FeedWakeups
from chatsapp.reflex_seam import ReflexApp, link_to, redis_of
from chatsapp.services import Services, offload

log = logging.getLogger(__name__)

HEARTBEAT_S = 10.0
"""How often a process renews its presence lease on the chats its tabs show (the lease:
``chatsapp.states.chat_people.PRESENCE_LEASE_S``, three heartbeats)."""
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
    # on ``conv-<chat>``: ``reload(owner_id)``, ``show_tabs_of``
    people: type[rx.State]
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
        self._usernames: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # Presence: this process's name in the counts, the wall clock leases are read on
        # (processes compare them), and the tabs here per chat id (while any, a heartbeat).
        self.process = f"{uuid.uuid4().hex[:12]}"
        self.clock: Callable[[], float] = time.time
        self.heartbeat_s = HEARTBEAT_S
        self._here: dict[str, dict[str, int]] = {}  # chat id -> user id -> tabs here
        self._heartbeat: asyncio.Task[None] | None = None

    def install(self) -> None:
        self.bridge.watch_listener = self

    async def follow_feed(self) -> None:
        """Follow the feed until cancelled (the app's lifespan task)."""
        sharing = await offload(self.services.sharing)
        wakeups = FeedWakeups(self.bridge.serves_anyone, redis_of(self.app))
        unsubscribe = sharing.subscribe(wakeups.committed_here)
        try:
            await self._follow(sharing, wakeups)
        finally:
            unsubscribe()
            await wakeups.aclose()

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
            except Exception:  # the next wake-up reads again
                log.warning("sharing feed read failed", exc_info=True)

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
        # First: the chat's streamed text goes to the tabs the bridge says show it
        # (``chatsapp.live.text_frames``), and none may follow the emptied views.
        self.bridge.tab_left_chat(client_token)
        token = rx.BaseStateToken(ident=client_token, cls=self.states.tab)
        async with self.app.modify_state(token) as root:
            for view in self.states.chat_views:
                await link_to(await root.get_state(view), solo_token(client_token))
            tab: Any = await root.get_state(self.states.tab)
            tab.lose_chat(notice)

    # ── what the bridge reports (``chatsapp.live.bridge.WatchListener``) ──

    def watched(self, client_token: str, key: Key, change: int) -> None:
        viewer = self.bridge.tab_owner(client_token) or key[0]
        chat_id = key[1]
        tabs = self._here.setdefault(chat_id, {})
        tabs[viewer] = tabs.get(viewer, 0) + change
        if tabs[viewer] <= 0:
            del tabs[viewer]
        if not tabs:
            del self._here[chat_id]
        self._spawn(self._show_tabs_here(chat_id))
        if self._here and (self._heartbeat is None or self._heartbeat.done()):
            with contextlib.suppress(RuntimeError):  # no loop: nothing is served yet
                self._heartbeat = asyncio.get_running_loop().create_task(
                    self._renew_leases(), context=contextvars.Context()
                )

    def chat_renamed(self, owner_id: str, chat_id: str) -> None:
        self._spawn(self._members_renamed(ChatRef(owner_id=owner_id, chat_id=chat_id)))

    # ── writes ──────────────────────────────────────────────────────

    async def _show_tabs_here(self, chat_id: str) -> None:
        """This process's tabs of ``chat_id`` per username, as they are when written (so
        writes that land out of order still leave the last state), and its lease renewed."""
        names = {user_id: await self._username(user_id) for user_id in self._here.get(chat_id, {})}
        token = conversation_token(chat_id)
        async with shared_change(self.app, token, self.states.people) as people:
            tabs: dict[str, int] = {}
            for user_id, count in self._here.get(chat_id, {}).items():
                name = names.get(user_id) or await self._username(user_id)
                tabs[name] = tabs.get(name, 0) + count
            people.show_tabs_of(self.process, tabs, self.clock())

    async def _renew_leases(self) -> None:
        """While tabs here show chats: write their counts again, renewing this process's lease
        on each chat (and dropping the counts of processes whose lease ended), every
        ``heartbeat_s``."""
        while self._here:
            await asyncio.sleep(self.heartbeat_s)
            for chat_id in list(self._here):
                try:
                    await self._show_tabs_here(chat_id)
                except Exception:  # the next heartbeat tries again (within the lease)
                    log.warning("presence renewal failed", exc_info=True)

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
