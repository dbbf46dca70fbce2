"""Cross-process change detection for a directory's listeners (the live sidebar).

Local changes reach ``Chats.subscribe`` listeners after their commit. A change committed by
**another process** on the same folder (the ``chats`` CLI importing, another app worker)
does not run this process's hooks, so while anyone listens a daemon thread polls the
directory scope's ``data_version()`` every ``FOREIGN_POLL_S``: it moves only when another
connection committed (SQLite: ``PRAGMA data_version`` of the directory's connection;
PostgreSQL: the scope's commit counter, one indexed row read, which also carries commits made
on other machines). Then the rows past the watcher's watermarks
(highest ``num``, newest live ``updated_at``, newest ``deleted_at``) become the same events a
local change gives (``created``, ``turn_recorded``, ``deleted``); a change those cannot name
(a rename, shared memory, a backdated import update) becomes one ``changed`` event.

One thread polls every watched directory of the process (a thread per directory cost each
online person ~27 KB of stack and a thread): it starts with the first watched directory and
ends with the last. Each round first reads every watched directory's commit counter at once
(:func:`backend.storage.commit_counters`: on PostgreSQL one query for all of them); a
directory whose counter has not moved since its last poll is skipped, nobody having
committed to it. A directory whose connection is busy (a long transaction) is skipped for
that round rather than waited for, so one busy directory never delays the others; its next
poll sees what it missed (``data_version`` is a counter). Listeners run on that thread, so
they must be quick (the bridge's only schedule work on the event loop).

Cost: nothing when nobody subscribes; otherwise one pragma per directory per poll (SQLite),
or one round trip per poll for all of a database's directories plus one per directory that
anyone committed to since (PostgreSQL); the watermarks again only after this process wrote
through the directory's handle, plus three indexed reads per poll that saw a foreign
commit (``bench/chat_index_engines_bench.py`` measures both). Delivery is at least once: a
local change that lands between two polls with a foreign one may be announced again
(listeners reload; a repeat is harmless).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from backend.chats.chat_records import ChatRecordStore
from backend.chats.events import (
    ChatCreated,
    ChatDeleted,
    ChatTurnRecorded,
    DirectoryChanged,
    DirectoryEvent,
)
from backend.storage import Scope, commit_counters

logger = logging.getLogger(__name__)

FOREIGN_POLL_S = 0.5
MAX_EVENTS_PER_KIND = 100
"""Past this many rows of one kind in one poll, a single ``changed`` says "reload"."""


class ForeignChangeWatcher:
    """Turns other processes' commits to one directory scope into directory events."""

    def __init__(
        self,
        database: Scope,
        records: ChatRecordStore,
        directory_id: str,
        emit: Callable[[DirectoryEvent], None],
    ) -> None:
        self._db = database
        self._records = records
        self._directory_id = directory_id
        self._emit = emit
        self._version = 0
        self._marks = (0, 0, 0)
        self._written = -1  # the handle's rows written when the marks were read
        self._counter: int | None = None  # the commit counter at the last poll that ran

    @property
    def scope(self) -> Scope:
        return self._db

    @property
    def running(self) -> bool:
        return _poller.watches(self)

    def start(self) -> None:
        if self._db.closed or _poller.watches(self):
            return
        self._baseline()
        _poller.add(self)

    def stop(self) -> None:
        """Stop polling (never waits: a caller may hold the database lock a poll waits for)."""
        _poller.remove(self)

    def _baseline(self) -> None:
        with self._db.lock:  # version and marks describe the same moment
            self._version = self._db.data_version()
            self._read_marks()

    def poll_round(self, counter: int | None = None) -> None:
        """One poll by the shared thread: emit what it found, unless the database is busy.
        ``counter``, read before the round, equal to the one read before the last poll that
        ran: nobody committed since (that poll saw everything before its counter), so
        nothing to ask."""
        if counter is not None and counter == self._counter:
            return
        if not self._db.lock.acquire(blocking=False):
            return  # a long transaction: the next round sees what it missed
        try:
            events = self.poll()
        except Exception:  # a closed database at shutdown, a busy file: try next time
            if self._db.closed:
                _poller.remove(self)
            else:
                logger.warning("directory watcher poll failed", exc_info=True)
            return
        finally:
            self._db.lock.release()
        self._counter = counter
        for event in events:
            try:
                self._emit(event)
            except Exception:  # one listener's failure must not stop the others' polls
                logger.warning("directory listener failed", exc_info=True)

    def _read_marks(self) -> None:
        """Where the watcher stands now (call with the lock held)."""
        self._written = self._db.stats.rows_written
        self._marks = self._records.watermarks()

    def poll(self) -> list[DirectoryEvent]:
        """The events for what other processes committed since the last poll."""
        with self._db.lock:
            version = self._db.data_version()
            if version == self._version:
                # Only local commits since, if any: move the marks past them (no events).
                # Nothing written through this handle since the marks: they still hold.
                if self._db.stats.rows_written != self._written:
                    self._read_marks()
                return []
            created, updated, deleted = self._records.changed_after(
                self._marks, MAX_EVENTS_PER_KIND
            )
            self._version = version
            self._read_marks()
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


class _Poller:
    """The one thread that polls every watched directory of the process, every
    ``FOREIGN_POLL_S``; it runs while at least one directory is watched."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchers: dict[int, ForeignChangeWatcher] = {}
        self._thread: threading.Thread | None = None

    def watches(self, watcher: ForeignChangeWatcher) -> bool:
        with self._lock:
            return id(watcher) in self._watchers

    def add(self, watcher: ForeignChangeWatcher) -> None:
        with self._lock:
            self._watchers[id(watcher)] = watcher
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="chats-watch", daemon=True)
                self._thread.start()

    def remove(self, watcher: ForeignChangeWatcher) -> None:
        with self._lock:
            self._watchers.pop(id(watcher), None)

    def _run(self) -> None:
        while True:
            time.sleep(FOREIGN_POLL_S)
            with self._lock:
                if not self._watchers:
                    self._thread = None  # under the lock: ``add`` starts a new one
                    return
                watchers = list(self._watchers.values())
            counters = commit_counters([watcher.scope for watcher in watchers])
            for watcher, counter in zip(watchers, counters, strict=True):
                if self.watches(watcher):  # not stopped since the round began
                    watcher.poll_round(counter)


_poller = _Poller()
