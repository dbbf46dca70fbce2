"""One SQLite connection with a single ``execute`` choke point.

Every store (conversation, directory, runtime) talks to its file through a
:class:`Database`. It owns the invariants every store relies on:

* **Pragmas.** WAL journal, ``synchronous=NORMAL`` (a committed transaction survives a killed
  process; only an OS crash can lose the newest commits), ``busy_timeout`` so foreign processes
  on the same file wait instead of failing, foreign keys off (the stores keep their own links).
* **One lock per connection.** The connection is shared across threads (async callers offload
  to worker threads); an ``RLock`` serialises statements, and a transaction holds it from
  ``BEGIN`` to ``COMMIT`` so a conversation's writes never interleave.
* **Transactions.** ``transaction()`` is reentrant: the outermost block issues
  ``BEGIN IMMEDIATE`` (take the write lock up front: no deadlock upgrading a read lock between
  processes), nested blocks use savepoints. Callbacks registered with ``after_commit`` run once
  the outermost block commits (change feeds fire only for durable writes); ``on_rollback``
  callbacks let stores drop caches that described the rolled-back writes.
* **Accounting.** ``stats`` counts statements, rows returned and rows written (from
  ``total_changes``) so benchmarks and tests can pin exact storage costs.
* **Errors.** ``sqlite3.Error`` becomes :class:`backend.errors.StorageError` (chained), except
  ``IntegrityError``, which stores handle themselves.
* **Migrations.** ``migrate(component, [fn, ...])`` applies append-only, named functions, each
  in one transaction together with its bookkeeping row.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.errors import StorageError

BUSY_TIMEOUT_MS = 10_000

Migration = Callable[["Database"], None]

_CREATE_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS _migrations (
    component TEXT NOT NULL,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL,
    PRIMARY KEY (component, name)
) WITHOUT ROWID
"""
_SELECT_APPLIED = "SELECT name FROM _migrations WHERE component = ?"
_INSERT_APPLIED = "INSERT INTO _migrations (component, name, applied_at) VALUES (?, ?, ?)"


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


class Database:
    """A thread-safe sqlite3 connection to one file (or ``":memory:"``)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        try:
            self._conn = sqlite3.connect(
                str(path),
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,  # we issue BEGIN/COMMIT ourselves
                check_same_thread=False,
            )
            self._conn.row_factory = sqlite3.Row
            for pragma in (
                "journal_mode = WAL",
                "synchronous = NORMAL",
                f"busy_timeout = {BUSY_TIMEOUT_MS}",
                "foreign_keys = OFF",
            ):
                self._conn.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open database {path}: {exc}") from exc
        self.lock = threading.RLock()
        self.stats = OpStats()
        self._depth = 0
        self._after_commit: list[Callable[[], None]] = []
        self._on_rollback: list[Callable[[], None]] = []
        self._closed = False

    # ── statements ──────────────────────────────────────────────────

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        with self.lock:
            before = self._conn.total_changes
            try:
                cursor = self._conn.execute(sql, params)
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise StorageError(f"{exc} (in: {_first_line(sql)})") from exc
            self.stats.statements += 1
            self.stats.rows_written += self._conn.total_changes - before
            return cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.lock:
            before = self._conn.total_changes
            try:
                self._conn.executemany(sql, rows)
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as exc:
                raise StorageError(f"{exc} (in: {_first_line(sql)})") from exc
            self.stats.statements += 1
            self.stats.rows_written += self._conn.total_changes - before

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        with self.lock:
            rows = self._fetch(sql, params)
            return rows

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
            cursor = self.execute(sql, params)
        while True:
            with self.lock:
                try:
                    row = cursor.fetchone()
                except sqlite3.Error as exc:
                    raise StorageError(str(exc)) from exc
            if row is None:
                return
            self.stats.rows_read += 1
            yield row

    def _fetch(self, sql: str, params: Sequence[Any] | dict[str, Any]) -> list[sqlite3.Row]:
        cursor = self.execute(sql, params)
        try:
            rows = cursor.fetchall()
        except sqlite3.Error as exc:
            raise StorageError(f"{exc} (in: {_first_line(sql)})") from exc
        self.stats.rows_read += len(rows)
        return rows

    # ── transactions ────────────────────────────────────────────────

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextmanager
    def transaction(self) -> Iterator[Database]:
        """Reentrant write transaction; see the module docstring for the guarantees."""
        with self.lock:
            outermost = self._depth == 0
            savepoint = f"sp_{self._depth}"
            # Hooks registered inside a savepoint belong to it: a rollback to the savepoint
            # drops its after-commit hooks and runs its rollback hooks.
            marks = (len(self._after_commit), len(self._on_rollback))
            self.execute("BEGIN IMMEDIATE" if outermost else f"SAVEPOINT {savepoint}")
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                if outermost:
                    self._rollback_outermost()
                else:
                    self.execute(f"ROLLBACK TO {savepoint}")
                    self.execute(f"RELEASE {savepoint}")
                    undone = self._on_rollback[marks[1] :]
                    del self._after_commit[marks[0] :]
                    del self._on_rollback[marks[1] :]
                    for callback in undone:
                        callback()
                raise
            self._depth -= 1
            if not outermost:
                self.execute(f"RELEASE {savepoint}")
                return
            try:
                self.execute("COMMIT")
            except BaseException:
                self._rollback_outermost()
                raise
            callbacks, self._after_commit = self._after_commit, []
            self._on_rollback = []
        # Outside the lock: listeners may take other locks or call back into the store.
        for callback in callbacks:
            callback()

    def _rollback_outermost(self) -> None:
        callbacks, self._on_rollback = self._on_rollback, []
        self._after_commit = []
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        for callback in callbacks:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once the current outermost transaction commits (now if none)."""
        with self.lock:
            if self._depth:
                self._after_commit.append(callback)
                return
        callback()

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` if the current outermost transaction rolls back."""
        with self.lock:
            if self._depth:
                self._on_rollback.append(callback)

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
                    migration(self)
                    self.execute(_INSERT_APPLIED, (component, name, int(time.time() * 1000)))
                ran.append(name)
            return ran

    def table_exists(self, name: str) -> bool:
        row = self.query_one(
            "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?", (name,)
        )
        return row is not None

    # ── lifecycle ───────────────────────────────────────────────────

    def close(self) -> None:
        with self.lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    @property
    def closed(self) -> bool:
        return self._closed


def _first_line(sql: str) -> str:
    return " ".join(sql.split())[:120]
