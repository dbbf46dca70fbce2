"""Closing a person's directory once no tab of theirs is left, and past a bound of open ones.

Part of :class:`chatsapp.live.bridge.LiveBridge` (a mixin, so the bridge stays one reader's
size). ``directory_grace_s`` after a person's last tab left, ``Services.release_idle`` closes
their directory, runtime and library, unless a run or a background job still uses them (then
it asks again after another grace). Past ``MAX_OPEN_PEOPLE`` open directories, people with no
tab are released at once, least recently used first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from backend.chats import Chats
from chatsapp.services import Release, Services

DIRECTORY_GRACE_S = 60.0
"""How long a person's directory and runtime stay open after their last tab left."""
MAX_OPEN_PEOPLE = 256
"""Past this many open directories, people with no tab connected are released at once,
least recently used first, if unused for ``LRU_MIN_IDLE_S`` (a burst of sign-ins)."""
LRU_MIN_IDLE_S = 1.0


class _ListStates(Protocol):
    """What this part reads of the bridge's ``LiveStates``: whether projects are shown."""

    @property
    def projects(self) -> type | None: ...


class PersonReleases:
    """The directory releases of the bridge (the bridge provides what is declared here)."""

    services: Services
    states: _ListStates
    directory_grace_s: float
    _loop: asyncio.AbstractEventLoop | None
    _directory_releases: dict[str, asyncio.TimerHandle]
    _user_tabs: dict[str, set[str]]
    _pumps: dict[tuple[str, str], asyncio.Task[None]]
    _watched_directories: dict[str, Chats]
    _agent_saves_seen: dict[str, int]
    _archive_changed: set[str]
    _spawn: Callable[[Coroutine[Any, Any, None]], Any]
    _request_refresh: Callable[[str, str], None]

    def _schedule_directory_release(self, user_id: str) -> None:
        """Ask :meth:`_release_directory` in ``directory_grace_s`` (on the loop; idempotent)."""
        loop = self._loop
        if loop is None or loop.is_closed() or user_id in self._directory_releases:
            return
        self._directory_releases[user_id] = loop.call_later(
            self.directory_grace_s, self._release_directory, user_id
        )

    def _release_directory(self, user_id: str) -> None:
        self._directory_releases.pop(user_id, None)
        if user_id in self._user_tabs:
            return  # a tab came back within the grace period
        if any(user == user_id and not t.done() for (user, _chat), t in self._pumps.items()):
            self._schedule_directory_release(user_id)  # a pump's own grace has not ended yet
            return
        self._spawn(self._close_directory(user_id, self.directory_grace_s))

    async def _close_directory(self, user_id: str, idle_s: float) -> None:
        watched = self._watched_directories.get(user_id)
        outcome = await self.services.release_idle(user_id, idle_s)
        if outcome is Release.BUSY:
            if user_id not in self._user_tabs:
                self._schedule_directory_release(user_id)
            return
        # Forget the subscription only if it was to the closed directory (a new one may be open).
        if (
            watched is not None
            and watched.closed
            and self._watched_directories.get(user_id) is watched
        ):
            del self._watched_directories[user_id]
            self._agent_saves_seen.pop(user_id, None)

    def _reopened(self, user_id: str) -> None:
        # Another process may have changed the directory while it was released (nobody watched
        # it): the shared lists, which outlive a release in Reflex's state manager, are re-read.
        self._archive_changed.add(user_id)
        for kind in ("directory", "memory", "projects"):
            if kind != "projects" or self.states.projects is not None:
                self._request_refresh(kind, user_id)
        if user_id not in self._user_tabs:
            self._schedule_directory_release(user_id)
        people = self.services.people_by_last_use()
        excess = len(people) - MAX_OPEN_PEOPLE
        for person in people:
            if excess <= 0:
                return
            if person in self._user_tabs:
                continue
            pending = self._directory_releases.pop(person, None)
            if pending is not None:
                pending.cancel()
            self._spawn(self._close_directory(person, LRU_MIN_IDLE_S))
            excess -= 1
