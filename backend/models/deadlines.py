"""The idle and total time limits of one streamed reply, enforced around each read.

The idle limit is measured between *data* events, which only the SSE layer can see (a socket
timeout is reset by every byte, so ``: keep-alive`` comments would defeat it), and the
total limit spans the whole reply; both must interrupt a read that is waiting. Invariants:

* Only a read is ever interrupted, never the caller's code between two events: the reply is
  an async generator, and a timeout still armed while it ``yield``\\ s would cancel whatever
  the caller awaits (a database write) instead of the read.
* Time the caller spends between two events does not count towards the idle limit
  (:meth:`ReplyDeadlines.data_arrived` is called when the caller comes back): the limit is
  about the server, not a slow consumer.
* One timer per reply, re-armed lazily when it fires early, instead of a timeout object per
  read: a read costs a flag and a clock reading (a fresh ``asyncio.timeout`` per read was
  most of the client's per-chunk cost).
* A cancellation that is not ours (the run was stopped) passes through untouched.

``clock`` (seconds, monotonic) is the event loop's unless given: tests pass one that can
jump ahead, so "time spent between reads" needs no real waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from backend.errors import ModelTimeoutError

Limit = Literal["idle", "total"]
_T = TypeVar("_T")


class ReplyDeadlines:
    """Create on the event loop when the request starts; :meth:`close` when the reply ends."""

    def __init__(
        self,
        idle_s: float,
        total_s: float,
        error: Callable[[Limit], ModelTimeoutError],
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._clock = clock or self._loop.time
        now = self._clock()
        self._idle_s = idle_s
        self._total_at = now + total_s
        self._last_data = now
        self._error = error
        self._reader: asyncio.Task[object] | None = None  # the task waiting in a read
        self._expired: Limit | None = None
        self._timer: asyncio.TimerHandle | None = None

    def data_arrived(self) -> None:
        """A data event arrived and the caller has taken it: the idle limit starts again."""
        self._last_data = self._clock()

    async def read(self, awaitable: Awaitable[_T]) -> _T:
        """Await ``awaitable`` (one read); past a limit, raise ``ModelTimeoutError`` instead."""
        limit, deadline = self._nearest()
        if deadline <= self._clock():  # also catches a read that would not have waited
            if asyncio.iscoroutine(awaitable):
                awaitable.close()  # never started: close it, or Python warns it was not awaited
            raise self._error(limit)
        if self._timer is None:
            self._arm(deadline)
        task = asyncio.current_task()
        self._reader = task
        try:
            return await awaitable
        except asyncio.CancelledError:
            # uncancel() == 0: the only cancellation pending was ours, so it becomes the
            # timeout; a caller's own cancellation stays a cancellation.
            if self._expired is not None and task is not None and task.uncancel() == 0:
                raise self._error(self._expired) from None
            raise
        finally:
            self._reader = None

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _nearest(self) -> tuple[Limit, float]:
        idle_at = self._last_data + self._idle_s
        return ("idle", idle_at) if idle_at < self._total_at else ("total", self._total_at)

    def _arm(self, deadline: float) -> None:
        self._timer = self._loop.call_later(deadline - self._clock(), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if self._reader is None:
            return  # between reads: the next read checks the limits and re-arms
        limit, deadline = self._nearest()
        if deadline > self._clock():  # data arrived since the timer was set
            self._arm(deadline)
            return
        self._expired = limit
        self._reader.cancel()
