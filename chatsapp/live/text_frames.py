"""A streaming reply's newest text, sent straight to the tabs that show the chat.

Writing a shared state takes its lock, reads it and writes it back: with Redis (several
workers or nodes) four round trips before a frame leaves, and every other writer of the chat
(a tab's event, presence, a header refresh) waits on the same lock. Measured on two nodes
(``bench/load_bench.py --nodes 2``): a streamed frame's flush held the chat's lock 27 ms at the
median and 108 ms at p95, so the gap between frames sat at 2-2.4 x the model's own.

Most flushes change only the newest piece of the reply (``chatsapp.live.stream_pieces``:
level 0, at most ``BASE_CHARS`` plus what was flushed). :class:`TextFrames` sends such a flush
as a frame of that one var, with no lock and no state read, to every tab **this process's
bridge** says shows the chat, and publishes it on Redis for the other processes, which send it
to the tabs *their* bridges say show it. Each process decides for its own tabs, from the
bookkeeping that moves as a tab opens another chat (``LiveBridge.conversation_opened``, inside
the opening event, before the event's own update carries the new chat's values), so a tab
never receives the text of a chat it has left after the new chat's values reached it.

The shared state stays the truth a tab that opens the chat (or reconnects) reads: the run pump
writes the newest piece into it, under its lock, with its next locked write (a merge of the
pieces, a run event). The newest piece a tab reads from it may lag behind the frames sent
since; the next frame carries the whole newest piece (not a suffix) and replaces it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from chatsapp.reflex_seam import BaseState, ReflexApp, redis_of, send_here, vars_update

log = logging.getLogger(__name__)

CHANNEL = "chats:streamed-text"
"""The Redis channel every process publishes its frames on and listens to."""
RESUBSCRIBE_S = 1.0
"""How long a process waits before it listens again after losing Redis."""

Key = tuple[str, str]  # (owner id, chat id)


class TextFrames:
    """Frames of ``state_cls``'s vars, for the tabs of every process that show a chat."""

    def __init__(
        self, app: ReflexApp, state_cls: type[BaseState], watchers: Callable[[Key], set[str]]
    ) -> None:
        self.app = app
        self.state_cls = state_cls
        self.watchers = watchers
        self.process = uuid.uuid4().hex
        self.subscribed = asyncio.Event()  # (tests wait for it)
        self.published = True  # the last publish reached Redis (a failure is logged once)

    async def send(self, key: Key, values: dict[str, Any]) -> None:
        """``values`` to the tabs showing chat ``key``: this process's now, the others' through
        Redis (awaited: a chat's frames are published, and so arrive, in the order sent)."""
        await send_here(self.app, vars_update(self.state_cls, values), self.watchers(key))
        redis = redis_of(self.app)
        if redis is None:
            return
        message = {"from": self.process, "owner": key[0], "chat": key[1], "values": values}
        try:
            await redis.publish(CHANNEL, json.dumps(message))
        except Exception:  # Redis went away: this process's tabs still stream
            if self.published:
                log.warning("streamed text: not published for other processes", exc_info=True)
            self.published = False
        else:
            self.published = True

    async def follow(self) -> None:
        """Send the frames other processes publish to this process's tabs, until cancelled
        (the app's lifespan task; nothing to do without Redis)."""
        redis = redis_of(self.app)
        if redis is None:
            return
        while True:
            try:
                async with redis.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    async for message in pubsub.listen():
                        if message.get("type") == "subscribe":
                            self.subscribed.set()
                        elif message.get("type") == "message":
                            await self._received(message["data"])
            except Exception:  # Redis went away: frames resume once it is back
                log.warning("streamed text: listening again", exc_info=True)
            self.subscribed.clear()
            await asyncio.sleep(RESUBSCRIBE_S)

    async def _received(self, data: bytes | str) -> None:
        try:
            message = json.loads(data)
            sender, key, values = (
                message["from"],
                (message["owner"], message["chat"]),
                message["values"],
            )
        except (ValueError, TypeError, KeyError):
            log.warning("streamed text: a message not of this app on %s", CHANNEL)
            return
        if sender == self.process:
            return  # sent to this process's tabs already
        tabs = self.watchers(key)
        if tabs:
            await send_here(self.app, vars_update(self.state_cls, values), tabs)
