"""Ordered, replayable run events per conversation.

Every event a conversation's runs emit gets the next sequence number of that conversation and
is kept in a bounded buffer, so a subscriber that joins late (a second tab, a reconnect)
replays everything after the sequence number it last saw and then continues live, without
gaps or duplicates.

Invariants:

* ``seq`` starts at 1 and grows by exactly one per event of a conversation, for the life of
  the runtime. A subscriber resuming with a number from a previous process (larger than any
  current one) is replayed from the start of the buffer.
* The buffer keeps at least the whole current run; older runs are evicted oldest-first once
  it holds more than ``max_events``. A subscriber asking for evicted events starts at the
  oldest one still buffered (the messages themselves are in the store; events are only the
  live view of them).
* A run's events come in the order the run went, its end once and last: ``run.queued`` (a
  run this runtime queued) before ``run.started``, even when the worker was awake before the
  enqueue returned (``run_queue``: ``WorkingChat.announcing``); an end seen by a look at the
  run table is published only for a run its record shows finished, and not again for one
  this runtime ended itself (``recovery``).
* Publishing never blocks and never waits for subscribers; each subscriber is woken on its
  own event loop (``call_soon_threadsafe``), so publishers and subscribers may live on
  different loops or threads.

Each event's payload is one type per kind (:mod:`backend.runtime.run_events`: ``RunQueued``,
``RunStarted``, ``ContextCompacted``, ``MessageDelta``, ``ToolCalled``, ``RunCompleted``,
``RunFailed``, ``RunCancelled``); subscribers dispatch on ``event.payload``'s type. ``type`` and
``data`` are the same event as its name and JSON mapping, for readers outside the process.
``run.queued`` carries the messages it stored and ``run.completed`` the finished reply, so a
view shows them without reading them back.

A run another process answers shows here as its end event only (``error_type`` is then
``""``, and ``run.completed`` carries no message): deltas stay in the process that streams
them.

Assistant messages carry ``metadata = {"status", "runId", "model", "endpoint", "agent",
"usage"?, "error"?}`` (the model the run was claimed with, see ``model_choice``; the reply's
tokens, see ``backend.models.usage``) with
status ``queued`` / ``running`` (placeholder, parts so far) / ``completed`` / ``failed`` /
``cancelled``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from backend.clock import now_ms
from backend.runtime.records import RunEvent
from backend.runtime.run_events import RunPayload

DEFAULT_MAX_BUFFERED_EVENTS = 5_000


@dataclass(frozen=True, slots=True)
class PublishedRunEvent(RunEvent):
    """A run event as this process published it: its typed payload too."""

    payload: RunPayload = field(kw_only=True)


class _Waiter:
    __slots__ = ("event", "loop")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.event = asyncio.Event()

    def wake(self) -> None:
        if not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.event.set)


class EventLog:
    """The event stream of one conversation."""

    def __init__(self, chat_id: str, *, max_events: int = DEFAULT_MAX_BUFFERED_EVENTS) -> None:
        self.chat_id = chat_id
        self._max_events = max_events
        self._lock = threading.Lock()
        self._events: deque[PublishedRunEvent] = deque()
        self._last_seq = 0
        self._waiters: set[_Waiter] = set()
        self._closed = False

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._last_seq

    def publish(self, run_id: str, payload: RunPayload) -> PublishedRunEvent:
        with self._lock:
            self._last_seq += 1
            event = PublishedRunEvent(
                seq=self._last_seq,
                type=payload.TYPE,
                chat_id=self.chat_id,
                run_id=run_id,
                data=payload.data(),
                at=now_ms(),
                payload=payload,
            )
            self._events.append(event)
            self._evict(keep_run=run_id)
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.wake()
        return event

    def _evict(self, keep_run: str) -> None:
        while len(self._events) > self._max_events and self._events[0].run_id != keep_run:
            self._events.popleft()

    def since(self, after_seq: int) -> list[PublishedRunEvent]:
        """Buffered events with ``seq > after_seq``, in order.

        An ``after_seq`` beyond the newest event can only come from a previous log (the
        process restarted and numbering began again): such a subscriber gets everything.
        """
        with self._lock:
            if after_seq > self._last_seq:
                after_seq = 0
            if not self._events or self._events[-1].seq <= after_seq:
                return []
            first = self._events[0].seq
            start = max(0, after_seq - first + 1)
            return [self._events[i] for i in range(start, len(self._events))]

    def close(self) -> None:
        """End every subscription (runtime shutdown)."""
        with self._lock:
            self._closed = True
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.wake()

    async def subscribe(self, after_seq: int = 0) -> AsyncIterator[PublishedRunEvent]:
        """Replay from ``after_seq`` then follow live events until the log is closed."""
        waiter = _Waiter()
        with self._lock:
            self._waiters.add(waiter)
        try:
            cursor = 0 if after_seq > self.last_seq else after_seq  # see since()
            while True:
                waiter.event.clear()
                batch = self.since(cursor)
                for event in batch:
                    cursor = event.seq
                    yield event
                if batch:
                    continue
                with self._lock:
                    if self._closed:
                        return
                await waiter.event.wait()
        finally:
            with self._lock:
                self._waiters.discard(waiter)
