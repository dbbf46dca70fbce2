"""One SQLite connection with a single choke point for every statement.

Every store (conversation, directory, runtime) talks to its file through a
:class:`Database`. It owns the invariants every store relies on:

* **Opening.** Pragmas (WAL, durability, busy timeout) and the memory a connection may hold
  are :mod:`backend.storage.connection`'s.
* **One lock per connection.** The connection is shared across threads (async callers offload
  to worker threads); an ``RLock`` serialises statements, and a transaction holds it from
  ``BEGIN`` to ``COMMIT`` so a conversation's writes never interleave.
* **Transactions.** ``transaction()`` is reentrant: the outermost block issues
  ``BEGIN IMMEDIATE`` (take the write lock up front: no deadlock upgrading a read lock between
  processes), nested blocks use savepoints. Callbacks registered with ``after_commit`` run once
  the outermost block commits (change feeds fire only for durable writes); ``on_rollback``
  callbacks let stores drop caches that described the rolled-back writes. Hooks registered
  inside a savepoint belong to it: rolling it back drops its ``after_commit`` hooks and runs its
  ``on_rollback`` hooks. ``derived_transaction()`` is one for rows rebuilt after any loss: its
  commit is never an ``fsync``.
* **Accounting.** ``stats`` counts statements, rows returned and rows written so benchmarks and
  tests can pin exact storage costs. Rows written are the connection's ``total_changes`` since
  it opened, read when ``stats`` is read: a statement's changes count once it has finished,
  which for ``INSERT/UPDATE/DELETE ... RETURNING`` is when its rows have been consumed.
* **Errors.** ``sqlite3.Error`` becomes :class:`backend.errors.StorageError` (chained), except
  ``IntegrityError``, which stores handle themselves. A statement on a closed database is a
  ``StorageError`` too. A string UTF-8 cannot encode (a lone surrogate) is an
  ``InvalidInputError``: stores apply ``backend.storage.text.well_formed_text`` to free text and
  refuse such ids, so reaching this is a missed case, reported clearly instead of as a codec
  error.
* **On demand.** ``Database(path, on_demand=True)`` opens the file at its first statement: a
  connection kept for rare reads (a directory's search and attachment readers) costs nothing
  until used (an open one holds ~100 KB of SQLite heap even idle).
* **Migrations.** ``migrate(component, [fn, ...])`` applies append-only, named functions, each
  in one transaction together with its bookkeeping row.

Every statement, whichever method issued it, passes through ``_run`` (count, translate). A
durable append is one transaction and four statements, so this path is kept lean and measured
(``bench/sessions_bench.py`` compares it with a bare ``sqlite3`` insert): a class, not a
generator, as the transaction context manager; no per-statement bookkeeping beyond one counter;
no second lock acquisition where the caller already holds the lock; and one shared cursor for
the statements whose cursor never leaves this module (transaction control, ``write``,
``data_version``) instead of a new cursor each.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from backend.clock import now_ms
from backend.errors import InvalidInputError, StorageError
from backend.storage.connection import BUSY_TIMEOUT_MS, open_connection
from backend.storage.durability import (
    SYNCHRONOUS_PRAGMAS,
    UNSYNCED,
    checked_synchronous,
    default_synchronous,
)
from backend.storage.hooks import TransactionHooks

MAX_INTEGER = 2**63 - 1
"""The largest integer SQLite binds; a larger Python int raises ``OverflowError``."""

Migration = Callable[["Database"], None]
_Runner = Callable[[str, Any], sqlite3.Cursor]

_CREATE_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS _migrations (
    component TEXT NOT NULL,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (component, name)
) WITHOUT ROWID
"""
_SELECT_APPLIED = "SELECT name FROM _migrations WHERE component = ?"
_SELECT_ONE_APPLIED = "SELECT 1 FROM _migrations WHERE component = ? AND name = ?"
_INSERT_APPLIED = "INSERT INTO _migrations (component, name, applied_at) VALUES (?, ?, ?)"
_SELECT_TABLE = "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?"

_BEGIN = "BEGIN IMMEDIATE"
_BEGIN_READ = "BEGIN"
_COMMIT = "COMMIT"
_DATA_VERSION = "PRAGMA data_version"
_SHRINK_MEMORY = "PRAGMA shrink_memory"


@dataclass
class OpStats:
    """Running totals for one connection; subtract two snapshots to cost an operation."""

    statements: int = 0
    rows_read: int = 0
    rows_written: int = 0

    def snapshot(self) -> OpStats:
        return OpStats(self.statements, self.rows_read, self.rows_written)

    def __sub__(self, other: OpStats) -> OpStats:
        return OpStats(
            self.statements - other.statements,
            self.rows_read - other.rows_read,
            self.rows_written - other.rows_written,
        )


class Database(TransactionHooks):
    """A thread-safe sqlite3 connection to one file (or ``":memory:"``).

    ``synchronous`` (``"normal"`` / ``"full"``) defaults to the process's level (see
    :mod:`backend.storage.durability`).
    """

    engine_kind = "sqlite"  # which twin of a store runs on it (backend.storage.scope)

    def __init__(
        self, path: str | Path, *, synchronous: str | None = None, on_demand: bool = False
    ) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self.synchronous = checked_synchronous(synchronous or default_synchronous())
        self._target = str(path)
        self._conn: sqlite3.Connection | None = None
        self._changes_at_open = 0
        self.lock = threading.RLock()
        self._stats = OpStats()
        # Serialises refreshing ``rows_written`` only (so reading stats never waits for a
        # transaction on another thread, and concurrent readers never move it backwards).
        self._stats_lock = threading.Lock()
        self._init_hooks()
        self._closed = False
        # Holds no state of its own (that lives here, under the lock), so one serves every
        # block, nested or on any thread: no allocation per transaction.
        self._transaction = _Transaction(self)
        if on_demand:
            # The first statement connects (under the lock, as every statement runs); until
            # then the runners are these stand-ins, so the hot path pays nothing for it.
            self._on_new_cursor = self._connect_then("_on_new_cursor")
            self._on_shared_cursor = self._connect_then("_on_shared_cursor")
            self._executemany = self._connect_then("_executemany")
        else:
            self._connect()

    def _connect(self) -> sqlite3.Connection:
        """Open the connection (the caller holds the lock, or owns the
        object still being built)."""
        if self._closed:
            raise StorageError(f"cannot operate on a closed database ({self.path})")
        conn = open_connection(self._target, self.synchronous)
        # Creating a cursor is a measurable part of a small statement: the statements whose
        # cursor never escapes (see ``_run``) share this one, which returns plain tuples.
        shared = conn.cursor()
        shared.row_factory = None
        self._changes_at_open = conn.total_changes
        self._on_new_cursor = conn.execute
        self._on_shared_cursor = shared.execute
        self._executemany = conn.executemany
        self._conn = conn
        return conn

    def _connect_then(self, runner: str) -> _Runner:
        """A stand-in for the runner named ``runner`` that connects, then runs through it."""

        def first(sql: str, params: Any) -> sqlite3.Cursor:
            if self._conn is None:
                self._connect()
            run: _Runner = getattr(self, runner)
            return run(sql, params)

        return first

    @property
    def connected(self) -> bool:
        """Whether the file is open now (an ``on_demand`` database opens at its first statement)."""
        return self._conn is not None

    # ── statements ──────────────────────────────────────────────────

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run one statement (under the lock, through the choke point ``_run``)."""
        # acquire/release rather than ``with``: measurably cheaper, and this runs for most
        # statements.
        lock = self.lock
        lock.acquire()
        try:
            return self._run(self._on_new_cursor, sql, params)
        finally:
            lock.release()

    def _run(self, run: _Runner, sql: str, params: Any = ()) -> sqlite3.Cursor:
        """The choke point: every statement of every store meets sqlite3 here, lock held.

        Counts the statement and translates errors. Rows written are not measured here but
        from ``total_changes`` when ``stats`` is read: exact also for a ``RETURNING``
        statement, whose changes SQLite counts only once its rows have been consumed, and
        nothing to pay per statement. ``run`` is ``_on_new_cursor`` (the caller may keep the
        cursor), ``_executemany``, or ``_on_shared_cursor`` for the statements whose cursor
        is done with before the lock is released. Callers that already hold the lock
        (transactions, ``query``) call this directly.
        """
        try:
            cursor = run(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:  # incl. ProgrammingError on a closed database
            raise StorageError(f"{exc} (in: {_first_line(sql)})") from exc
        except UnicodeEncodeError as exc:  # a lone surrogate a store did not normalise
            raise InvalidInputError(
                f"text holding a lone UTF-16 surrogate cannot be stored (in: {_first_line(sql)})"
            ) from exc
        self._stats.statements += 1
        return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement once per row (one counted statement)."""
        with self.lock:
            self._run(self._executemany, sql, rows)

    def write(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        """Run one ``INSERT``/``UPDATE``/``DELETE`` and return how many rows it changed.

        Unlike ``execute`` it hands out no cursor, so it runs on the shared one (a new cursor
        per statement is a measurable part of a small append). Rows a ``RETURNING`` clause
        produces are read and dropped: use ``execute`` to see them.
        """
        lock = self.lock
        lock.acquire()
        try:
            cursor = self._run(self._on_shared_cursor, sql, params)
            if cursor.description is not None:  # RETURNING: finish the statement
                try:
                    cursor.fetchall()
                except sqlite3.Error as exc:
                    raise StorageError(f"{exc} (in: {_first_line(sql)})") from exc
            changed: int = cursor.rowcount
            return changed
        finally:
            lock.release()

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes when another connection has committed to the file
        since this one last looked. One counted statement; it reads no table rows."""
        lock = self.lock
        lock.acquire()  # held until the row is fetched: the cursor is shared
        try:
            version: int = self._run(self._on_shared_cursor, _DATA_VERSION).fetchone()[0]
            return version
        finally:
            lock.release()

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        lock = self.lock
        lock.acquire()  # as in ``execute``; held until every row is fetched
        try:
            return self._fetch(sql, params)
        finally:
            lock.release()

    def query_one(
        self, sql: str, params: Sequence[Any] | dict[str, Any] = ()
    ) -> sqlite3.Row | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def iterate(
        self, sql: str, params: Sequence[Any] | dict[str, Any] = ()
    ) -> Iterator[sqlite3.Row]:
        """Yield rows lazily; holds the lock only while fetching each row."""
        with self.lock:
            cursor = self._run(self._on_new_cursor, sql, params)
        while True:
            with self.lock:
                try:
                    row = cursor.fetchone()
                except sqlite3.Error as exc:
                    raise StorageError(str(exc)) from exc
                if row is None:
                    return
                self._stats.rows_read += 1
            yield row

    def _fetch(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> list[sqlite3.Row]:
        cursor = self._run(self._on_new_cursor, sql, params)  # the caller holds the lock
        try:
            rows = cursor.fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{exc} (in: {_first_line(sql)})") from exc
        self._stats.rows_read += len(rows)
        return rows

    # ── accounting ──────────────────────────────────────────────────

    @property
    def stats(self) -> OpStats:
        """The running totals (one live object), with ``rows_written`` brought up to date.

        ``rows_written`` is refreshed by reading this property: take ``db.stats`` again (or a
        ``snapshot()``) rather than keeping the object and reading the field later.
        """
        with self._stats_lock:
            if not self._closed and self._conn is not None:  # close() took the last count
                self._stats.rows_written = self._conn.total_changes - self._changes_at_open
            return self._stats

    # ── transactions ────────────────────────────────────────────────

    def transaction(self) -> _Transaction:
        """Reentrant write transaction; see the module docstring for the guarantees.

        ``with database.transaction() as db:`` binds the database itself.
        """
        return self._transaction

    @contextlib.contextmanager
    def derived_transaction(self) -> Iterator[Database]:
        """A write transaction of rows derived from others and rebuilt after any loss (a
        message's vector): committed with no ``fsync`` whatever the level, so it never queues at
        the disk beside durable commits (the next durable commit syncs it too). Inside another
        transaction it simply joins it."""
        with self.lock:
            relaxed = self.synchronous != UNSYNCED and not self._depth
            if relaxed:
                self._set_synchronous(UNSYNCED)
            try:
                with self.transaction():
                    yield self
            finally:
                if relaxed and not self._closed:
                    self._set_synchronous(self.synchronous)

    def _set_synchronous(self, level: str) -> None:
        self._run(self._on_shared_cursor, f"PRAGMA synchronous = {SYNCHRONOUS_PRAGMAS[level]}")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Database]:
        """A read transaction: every query inside sees one committed state of the file.

        A deferred ``BEGIN`` takes no write lock, so writers in other connections carry on;
        inside a transaction of this connection it simply joins it. For reads only: a
        ``transaction()`` opened inside it fails.
        """
        with self.lock:
            if self._depth or (self._conn is not None and self._conn.in_transaction):
                yield self
                return
            self._run(self._on_shared_cursor, _BEGIN_READ)
            try:
                yield self
            finally:
                self._run(self._on_shared_cursor, _COMMIT)

    def _rollback_savepoint(self, depth: int, marks: tuple[int, int]) -> None:
        self._run(self._on_shared_cursor, f"ROLLBACK TO sp_{depth}")
        self._run(self._on_shared_cursor, f"RELEASE sp_{depth}")
        self._undo_savepoint_hooks(marks)

    def _rollback_outermost(self) -> None:
        callbacks = self._take_rollback_hooks()
        if self._conn is not None and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        for callback in callbacks:
            callback()

    # ── schema ──────────────────────────────────────────────────────

    def migrate(self, component: str, migrations: Sequence[Migration]) -> list[str]:
        """Apply the not-yet-applied ``migrations`` of ``component``; return their names."""
        with self.lock:
            self.execute(_CREATE_MIGRATIONS)
            applied = {row["name"] for row in self.query(_SELECT_APPLIED, (component,))}
            ran: list[str] = []
            for migration in migrations:
                name = migration.__name__
                if name in applied:
                    continue
                with self.transaction():
                    # Re-check under the write lock: another connection (thread or process)
                    # opening the same new file may have applied it since the read above.
                    if self.query_one(_SELECT_ONE_APPLIED, (component, name)) is not None:
                        continue
                    migration(self)
                    self.execute(_INSERT_APPLIED, (component, name, now_ms()))
                ran.append(name)
            return ran

    def backup_to(self, target: str | Path) -> None:
        """Copy this database into the file ``target`` with SQLite's online backup API.

        One step (all pages under one read lock), so the copy is one committed state of the
        file while other connections keep writing (WAL); ``target`` may be a live database
        other connections hold open: they see its new content, never a torn file.
        """
        with self.lock:
            source = self._conn or self._connect()
            try:
                destination = sqlite3.connect(str(target), timeout=BUSY_TIMEOUT_MS / 1000)
                try:
                    source.backup(destination, pages=-1)
                finally:
                    destination.close()
            except sqlite3.Error as exc:
                raise StorageError(f"backup of {self.path} to {target}: {exc}") from exc

    def release_memory(self) -> None:
        """Free the connection's page cache (``PRAGMA shrink_memory``): pages read next are
        read again. For after a one-off pass over many pages, e.g. opening a directory."""
        with self.lock:
            if self._conn is not None:  # an on-demand database not used yet holds nothing
                self._run(self._on_shared_cursor, _SHRINK_MEMORY)

    def table_exists(self, name: str) -> bool:
        return self.query_one(_SELECT_TABLE, (name,)) is not None

    # ── lifecycle ───────────────────────────────────────────────────

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            with self._stats_lock:  # the last count, while the connection can still give it
                if self._conn is not None:
                    self._stats.rows_written = self._conn.total_changes - self._changes_at_open
                self._closed = True
            if self._conn is not None:
                self._conn.close()

    @property
    def closed(self) -> bool:
        return self._closed


class _Transaction:
    """What ``Database.transaction()`` returns: a class, not a ``@contextmanager`` generator,
    because every durable append enters one and the generator machinery cost several
    microseconds of it. Its state (depth, savepoint marks, hooks) lives on the database and is
    only touched while the database lock is held, from ``__enter__`` to ``__exit__``."""

    __slots__ = ("_db",)

    def __init__(self, db: Database) -> None:
        self._db = db

    def __enter__(self) -> Database:
        db = self._db
        db.lock.acquire()
        try:
            depth = db._depth
            if depth:
                db._run(db._on_shared_cursor, f"SAVEPOINT sp_{depth}")
                db._mark_savepoint()
            else:
                db._run(db._on_shared_cursor, _BEGIN)
            db._depth = depth + 1
        except BaseException:
            db.lock.release()
            raise
        return db

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        db = self._db
        try:
            depth = db._depth = db._depth - 1
            if depth:
                marks = db._savepoint_marks.pop()
                if exc_type is None:
                    db._run(db._on_shared_cursor, f"RELEASE sp_{depth}")
                else:
                    db._rollback_savepoint(depth, marks)
                return
            if exc_type is not None:
                db._rollback_outermost()
                return
            try:
                db._run(db._on_shared_cursor, _COMMIT)
            except BaseException:
                db._rollback_outermost()
                raise
            if db._on_rollback:
                db._on_rollback = []
            if not db._after_commit:
                return
            callbacks, db._after_commit = db._after_commit, []
        finally:
            db.lock.release()
        # Outside the lock: listeners may take other locks or call back into the store.
        for callback in callbacks:
            callback()


def _first_line(sql: str) -> str:
    return " ".join(sql.split())[:120]
