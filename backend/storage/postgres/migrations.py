"""How a PostgreSQL scope applies a component's migrations: few round trips, same guarantees.

:meth:`PostgresScope.migrate` delegates here. What it promises is unchanged: migrations run
under ``pg_advisory_xact_lock`` of their component, in one transaction with their bookkeeping
rows, so processes starting together on an empty database apply each migration once and fail
none; a failing statement's error names that statement.

What changed is the traffic. A migration is a run of ``CREATE`` / ``ALTER`` statements, one
``execute`` each, and every one used to wait for its reply: a person's first directory open
paid 81 round trips, most of them DDL; now 35 (bench/pg_first_open_bench.py):

* ``BEGIN``, the scope's version bump, the advisory lock and the re-read of what is applied go
  out in one pipeline (the lock and the read stay two statements: the read's snapshot must be
  taken after the lock is granted, to see what a process that held it committed).
* A migration is handed a :class:`_DeferringScope`: a parameterless DDL statement it executes
  is queued (DDL returns no rows, so there is nothing to wait for), and the queue is sent as
  one pipeline with the bookkeeping rows when the component is done, or before anything else
  reaches the scope (a read, a nested transaction, any other attribute): statements still run
  in the order the migration wrote them. Inside a nested transaction nothing is deferred, so
  no queued statement crosses a savepoint.
* No savepoint per migration: the component's transaction already holds each migration and its
  row together, and a failure rolls all of it back, as it did.

When one statement of a sent pipeline fails, the statements before it ran, the rest were
skipped; the error raised is that statement's own, as if it had run alone.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import psycopg

from backend.clock import now_ms
from backend.storage.database import OpStats
from backend.storage.postgres.engine import PostgresEngine
from backend.storage.postgres.errors import translated
from backend.storage.postgres.rows import PgResult, PgRow
from backend.storage.postgres.statements import to_psycopg

Migration = Callable[[Any], None]
"""A migration takes the scope (typed by each store as the scope it writes for)."""

SELECT_APPLIED = "SELECT name FROM _migrations WHERE component = ?"
INSERT_APPLIED = "INSERT INTO _migrations (component, name, applied_at) VALUES (?, ?, ?)"
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(?)"
_DDL = re.compile(r"\s*(CREATE|ALTER|DROP|COMMENT)\b", re.IGNORECASE)

Statement = tuple[str, str, tuple[Any, ...]]
"""(the statement as the migration wrote it, as psycopg runs it, its parameters)."""


class MigratingScope(Protocol):
    """What this module uses of :class:`~backend.storage.postgres.scope.PostgresScope` (which
    imports this module, so it is not imported here)."""

    lock: threading.RLock
    engine: PostgresEngine
    _stats: OpStats
    _depth: int

    def transaction(self) -> AbstractContextManager[Any]: ...
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[PgRow]: ...
    def execute(self, sql: str, params: Sequence[Any] = ()) -> PgResult: ...
    def _borrowed(self, use: Callable[[psycopg.Connection[PgRow]], Any], sql: str) -> Any: ...


def apply_migrations(
    scope: MigratingScope, component: str, migrations: Sequence[Migration], lock_key: int
) -> list[str]:
    """Apply ``component``'s not-yet-applied ``migrations`` on ``scope``; their names."""
    with scope.lock:
        if _all_applied(_applied(scope, component), migrations):
            return []
        with scope.transaction():
            # Held to commit: a second process waits here, then sees what this one did.
            applied = _lock_and_read_applied(scope, component, lock_key)
            deferring = _DeferringScope(scope)
            ran: list[str] = []
            for migration in migrations:
                name = migration.__name__
                if name in applied:
                    continue
                migration(deferring)
                deferring.queue(INSERT_APPLIED, (component, name, now_ms()))
                ran.append(name)
            deferring.flush()
        return ran


def _applied(scope: MigratingScope, component: str) -> set[str]:
    return {row[0] for row in scope.query(SELECT_APPLIED, (component,))}


def _all_applied(applied: set[str], migrations: Sequence[Migration]) -> bool:
    return all(migration.__name__ in applied for migration in migrations)


def _lock_and_read_applied(scope: MigratingScope, component: str, lock_key: int) -> set[str]:
    """The advisory lock, then the applied names read after it is granted: one pipeline with
    the transaction's ``BEGIN`` and bump (the transaction's first statements)."""

    def run(conn: psycopg.Connection[PgRow]) -> psycopg.Cursor[PgRow]:
        conn.execute(to_psycopg(MIGRATION_LOCK), (lock_key,))
        return conn.execute(to_psycopg(SELECT_APPLIED), (component,))

    cursor: psycopg.Cursor[PgRow] = scope._borrowed(run, MIGRATION_LOCK)
    try:
        names = {row[0] for row in cursor.fetchall()}  # read once the pipeline has synced
    except psycopg.Error as exc:
        raise translated(exc, SELECT_APPLIED, scope.engine.location) from exc
    scope._stats.statements += 2
    scope._stats.rows_read += len(names)
    return names


class _DeferringScope:
    """The scope as a migration sees it: parameterless DDL is queued (see the module
    docstring); everything else first sends the queue, then is the scope's own."""

    def __init__(self, scope: MigratingScope) -> None:
        self._scope = scope
        self._depth = scope._depth
        self._queued: list[Statement] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> PgResult:
        if not params and self._scope._depth == self._depth and _DDL.match(sql):
            self._queued.append((sql, to_psycopg(sql), ()))
            return PgResult([], -1)  # what DDL reports: no rows, no row count
        self.flush()
        return self._scope.execute(sql, params)

    def queue(self, sql: str, params: tuple[Any, ...]) -> None:
        """Queue a statement to go out with the next pipeline (the bookkeeping row)."""
        self._queued.append((sql, to_psycopg(sql), params))

    def __getattr__(self, name: str) -> Any:
        self.flush()
        value = getattr(self._scope, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self.flush()  # (a method taken before a queued statement is still called after it)
            return value(*args, **kwargs)

        return call

    def flush(self) -> None:
        """Send the queued statements as one pipeline on the transaction's connection."""
        queued, self._queued = self._queued, []
        if not queued:
            return
        scope = self._scope
        cursors: list[psycopg.Cursor[PgRow]] = []

        def run(conn: psycopg.Connection[PgRow]) -> None:
            try:
                with conn.pipeline():
                    for _, query, params in queued:
                        cursors.append(conn.execute(query, params))
            except psycopg.Error as exc:
                raise translated(exc, _failed(queued, cursors), scope.engine.location) from exc

        scope._borrowed(run, queued[0][0])
        scope._stats.statements += len(queued)
        scope._stats.rows_written += sum(max(cursor.rowcount, 0) for cursor in cursors)


def _failed(queued: list[Statement], cursors: list[psycopg.Cursor[PgRow]]) -> str:
    """The statement whose error the pipeline raised: the first without a result (those
    after it were skipped, those before it ran)."""
    for (sql, _, _), cursor in zip(queued, cursors, strict=False):
        if cursor.pgresult is None:
            return sql
    return queued[len(cursors)][0] if len(cursors) < len(queued) else queued[-1][0]
