"""When a worker reads the sharing feed: at once after a change, and never while idle.

The feed (``Sharing.changes_since``) says which tabs must change; this module says *when* to
read it, so that nothing is read while nothing happened:

* **a change made in this process** (``Sharing.subscribe``: after the commit) wakes the
  reader at once, and, with Redis, is announced on :data:`HINT_CHANNEL`;
* **a change made by another worker** arrives as that announcement (Redis pub/sub), which
  wakes every worker's reader at once;
* **a fallback read** every :data:`FALLBACK_POLL_S`, only while this process serves a tab,
  catches what no one announced (the ``chats`` CLI ending an account, a lost pub/sub message).

A worker that serves no tab reads nothing: once a second it only looks whether one arrived.
An announcement carries nothing but "read the feed": the feed stays the one source.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

FALLBACK_POLL_S = 1.0
"""While a tab is served: the longest a change nobody announced waits to be read."""
HINT_CHANNEL = "chats:sharing-feed"


class FeedWakeups:
    """Wakes the sharing feed's reader (module docstring). Built and started on the loop."""

    def __init__(self, serving: Callable[[], bool], redis: Any = None) -> None:
        self.serving = serving
        self.redis = redis  # redis.asyncio.Redis, or None: one worker, nobody to tell
        self.fallback_poll_s = FALLBACK_POLL_S
        self._news = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._announcing = False
        self._unannounced = False
        self.listening = False  # subscribed to the other workers' announcements
        self._tasks: set[asyncio.Task[None]] = set()
        if redis is not None:
            self._spawn(self._hear_announcements())

    def committed_here(self) -> None:
        """``Sharing.subscribe``'s listener (on the committing thread): read now, tell others."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._heard_commit)

    async def wait(self) -> None:
        """Until news arrives, or the fallback interval ends while a tab is served here."""
        while True:
            try:
                await asyncio.wait_for(self._news.wait(), self.fallback_poll_s)
                break
            except TimeoutError:
                if self.serving():
                    break
        self._news.clear()

    async def aclose(self) -> None:
        """Stop listening (the reader's lifespan task ends)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _heard_commit(self) -> None:
        self._news.set()
        if self.redis is None:
            return
        self._unannounced = True
        if not self._announcing:
            self._announcing = True
            self._spawn(self._announce())

    async def _announce(self) -> None:
        """One announcement per burst of commits, and one more for a commit made while it was
        on its way (a worker that read before that commit must read again)."""
        try:
            while self._unannounced:
                self._unannounced = False
                await self.redis.publish(HINT_CHANNEL, "1")
        except Exception:  # the others' fallback read finds it
            log.warning("could not announce a sharing change", exc_info=True)
        finally:
            self._announcing = False

    async def _hear_announcements(self) -> None:
        while True:
            try:
                pubsub = self.redis.pubsub()
                try:
                    await pubsub.subscribe(HINT_CHANNEL)
                    self.listening = True
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            self._news.set()
                finally:
                    self.listening = False
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis restarted: listen again (the fallback read meanwhile)
                log.warning("sharing announcements interrupted", exc_info=True)
                await asyncio.sleep(self.fallback_poll_s)

    def _spawn(self, coro: Any) -> None:
        task = self._loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
