"""Temporary chats held while a window shows them, and removed once none has for the grace.

Every app process runs one keeper (a lifespan task). Each pass, every ``grace / 4``:

* holds the chats a tab of this process shows (the live bridge's pumped chats, which
  outlive their last tab by the bridge's own release grace): ``Chats.temporary.hold`` writes
  only for a temporary chat held less than half a grace more, so ordinary chats cost a read;
* expires what is due in every directory open here, and in the directories of people whose
  temporary chats it held before, until none is left (their directory may have been released
  since their last tab left: it is opened again for that, then released as usual).

A reload, or a tab that reopens the chat on another process within the grace, holds it on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from chatsapp.services import Services, offload

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (user id, chat id)


class TemporaryKeeper:
    """Holds watched temporary chats and expires due ones (see the module docstring)."""

    def __init__(self, services: Services, watched: Callable[[], set[Key]]) -> None:
        self.services = services
        self.watched = watched
        self._people: set[str] = set()  # people whose temporary chats may still be due

    @property
    def interval_s(self) -> float:
        return self.services.settings.temporary_chat_grace_s / 4

    def one_pass(self) -> None:
        """Hold, then expire (on a worker thread: storage calls)."""
        by_user: dict[str, set[str]] = {}
        for user_id, chat_id in self.watched():
            by_user.setdefault(user_id, set()).add(chat_id)
        for user_id, chat_ids in by_user.items():
            chats = self.services.directory(user_id, touch=False)
            chats.temporary.hold(chat_ids)
            self._people.add(user_id)
        for user_id in sorted(self._people):
            chats = self.services.directory(user_id, touch=False)
            chats.temporary.expire()
            if user_id not in by_user and chats.temporary.count() == 0:
                self._people.discard(user_id)

    async def run(self) -> None:
        """A pass every ``interval_s`` until cancelled (server stop); a failed pass is logged."""
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await offload(self.one_pass)
            except Exception:  # the next pass tries again
                log.warning("temporary chats pass failed", exc_info=True)
