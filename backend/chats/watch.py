"""Cross-process change detection for a directory's listeners (the live sidebar).

Local changes reach ``Chats.subscribe`` listeners after their commit. A change committed by
**another process** on the same folder (the ``chats`` CLI importing, another app worker)
does not run this process's hooks, so while anyone listens a daemon thread polls
``PRAGMA data_version`` of the directory's connection every ``FOREIGN_POLL_S``: it moves
only when another connection committed. Then the rows past the watcher's watermarks
(highest ``num``, newest live ``updated_at``, newest ``deleted_at``) become the same events a
local change gives (``created``, ``turn_recorded``, ``deleted``); a change those cannot name
(a rename, shared memory, a backdated import update) becomes one ``changed`` event.

Cost: nothing when nobody subscribes (the thread starts with the first listener and stops
with the last); otherwise one pragma per poll, plus three indexed reads per poll that saw a
foreign commit. Delivery is at least once: a local change that lands between two polls with
a foreign one may be announced again (listeners reload; a repeat is harmless).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from backend.chats.directory import DirectoryStore
from backend.chats.events import (
    ChatCreated,
    ChatDeleted,
    ChatTurnRecorded,
    DirectoryChanged,
    DirectoryEvent,
)
from backend.storage import Database

logger = logging.getLogger(__name__)

FOREIGN_POLL_S = 0.5
MAX_EVENTS_PER_KIND = 100
"""Past this many rows of one kind in one poll, a single ``changed`` says "reload"."""


class ForeignChangeWatcher:
    """Turns other processes' commits to one directory database into directory events."""

    def __init__(
        self,
        database: Database,
        directory: DirectoryStore,
        directory_id: str,
        emit: Callable[[DirectoryEvent], None],
        *,
        interval_s: float = FOREIGN_POLL_S,
    ) -> None:
        self._db = database
        self._directory = directory
        self._directory_id = directory_id
        self._emit = emit
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._version = 0
        self._marks = (0, 0, 0)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._db.closed:
                return
            self._baseline()
            self._stop = threading.Event()
            self._thread = threading.Thread(
                target=self._run,
                args=(self._stop,),
                name=f"chats-watch-{self._directory_id}",
                daemon=True,
            )
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
            self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            # Bounded: a caller holding the database lock (unsubscribing inside a transaction)
            # must not wait for a poll that waits for that lock; the thread ends on its own.
            thread.join(timeout=self._interval_s)

    def _baseline(self) -> None:
        with self._db.lock:  # version and marks describe the same moment
            self._version = self._db.data_version()
            self._marks = self._directory.watermarks()

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self._interval_s):
            try:
                for event in self.poll():
                    self._emit(event)
            except Exception:  # a closed database at shutdown, a busy file: try next time
                if self._db.closed:
                    return
                logger.warning("directory watcher poll failed", exc_info=True)

    def poll(self) -> list[DirectoryEvent]:
        """The events for what other processes committed since the last poll."""
        with self._db.lock:
            version = self._db.data_version()
            if version == self._version:
                # Only local commits since: move the marks past them (no events).
                self._marks = self._directory.watermarks()
                return []
            created, updated, deleted = self._directory.changed_after(
                self._marks, MAX_EVENTS_PER_KIND
            )
            self._version = version
            self._marks = self._directory.watermarks()
        if max(len(created), len(updated), len(deleted)) >= MAX_EVENTS_PER_KIND:
            return [DirectoryChanged(self._directory_id)]
        events: list[DirectoryEvent] = []
        new_ids = set()
        for record in created:
            if record.live:
                new_ids.add(record.id)
                events.append(ChatCreated(self._directory_id, record.summary()))
        for record in updated:
            if record.id not in new_ids:
                events.append(ChatTurnRecorded(self._directory_id, record.summary()))
        events.extend(ChatDeleted(self._directory_id, record.id) for record in deleted)
        return events or [DirectoryChanged(self._directory_id)]
