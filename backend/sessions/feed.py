"""ChangeFeed: delivers change events to listeners after the write is durable, in commit order.

A write calls ``publish(event)`` inside its transaction. The event is handed to listeners only
once the outermost transaction commits (``Database.after_commit``); a rolled-back write's event
is dropped (``Database.on_rollback``).

Ordering: each published event takes a ticket while the writer holds the database lock, so
tickets follow commit order. Commit callbacks run after the lock is released and can race
between threads, so they only *settle* their ticket; whoever settles drains every ticket that
is ready, in ticket order. One drainer at a time: a listener that writes (same thread) or a
concurrent writer just settles and leaves delivery to the running drainer, which is what keeps
every listener seeing events in commit order.

A listener that raises is logged and skipped; the write it observed has already committed and
the remaining listeners still get the event.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from backend.sessions.events import SessionChangeEvent, SessionChangeListener
from backend.storage import Scope

logger = logging.getLogger("backend.sessions")

_CANCELLED = object()


class ChangeFeed:
    """Ordered, after-commit fan-out of one file's change events."""

    def __init__(self, database: Scope) -> None:
        self._db = database
        self._listeners: list[SessionChangeListener] = []
        self._mutex = threading.Lock()
        self._next_ticket = 0  # advanced under the database lock only
        self._next_delivery = 0
        self._settled: dict[int, object] = {}
        self._draining = False

    def subscribe(self, listener: SessionChangeListener) -> Callable[[], None]:
        """Add ``listener``; the returned callable removes it (idempotent)."""
        with self._mutex:
            self._listeners.append(listener)
        return _Unsubscribe(self, listener)

    def _remove(self, listener: SessionChangeListener) -> None:
        with self._mutex:
            if listener in self._listeners:
                self._listeners.remove(listener)

    @property
    def has_listeners(self) -> bool:
        return bool(self._listeners)

    def publish(self, event: SessionChangeEvent) -> None:
        """Queue ``event`` for delivery after commit. Call inside the write's transaction."""
        if not self._listeners:
            return  # the common case on the hot path: nothing to build, nothing to order
        with self._db.lock:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._db.on_rollback(lambda: self._settle(ticket, _CANCELLED))
            self._db.after_commit(lambda: self._settle(ticket, event))

    def _settle(self, ticket: int, event: object) -> None:
        with self._mutex:
            self._settled[ticket] = event
            if self._draining:
                return
            self._draining = True
        try:
            self._drain()
        except BaseException:
            with self._mutex:
                self._draining = False
            raise

    def _drain(self) -> None:
        while True:
            with self._mutex:
                if self._next_delivery not in self._settled:
                    self._draining = False
                    return
                event = self._settled.pop(self._next_delivery)
                self._next_delivery += 1
                listeners = list(self._listeners)
            if event is _CANCELLED:
                continue
            for listener in listeners:
                try:
                    listener(event)  # type: ignore[arg-type]
                except Exception:
                    logger.warning("session change listener failed on %r", event, exc_info=True)


class _Unsubscribe:
    """The callable ``subscribe`` returns."""

    def __init__(self, feed: ChangeFeed, listener: SessionChangeListener) -> None:
        self._feed = feed
        self._listener = listener

    def __call__(self) -> None:
        self._feed._remove(self._listener)
