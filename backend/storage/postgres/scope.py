"""One scope on a PostgreSQL database: what one SQLite file is to a store, on a shared pool.

It keeps the promises of :class:`backend.storage.Database` (see :mod:`backend.storage.scope`):

* **One lock per scope.** ``lock`` (an ``RLock``) serialises this process's statements on the
  scope, and a transaction holds it from ``BEGIN`` to ``COMMIT``, exactly as the SQLite
  connection's lock does, so stores that reason under ``with db.lock`` reason the same here.
* **Connections.** A transaction pins one pooled connection; a statement outside one borrows
  a connection for that statement only. An idle scope holds no connection at all.
* **Write lock and change counter.** The outermost transaction begins with ``BEGIN`` and
  ``UPDATE _scopes SET version = version + 1``, pipelined with its first statement (no round
  trip of their own): the row lock is ``BEGIN IMMEDIATE`` (one writer per scope, across
  processes and machines, taken before any statement of the transaction runs; a transaction
  that runs none takes nothing), and the counter is what :meth:`data_version` reads: its total
  minus this scope's own commits moves exactly when someone else committed. A write statement
  outside a transaction is run in one (one pipeline), so it moves the counter too.
* **A lost commit is resolved, not retried.** When the connection dies during ``COMMIT`` (or
  during a lone write's pipeline), the transaction's witness (recorded by the bump, no round
  trip of its own) tells the primary reachable now whether it committed
  (:mod:`backend.storage.postgres.outcome`): committed is success; otherwise a
  :class:`~backend.storage.postgres.errors.CommitOutcomeError` says "aborted" or "unknown".
* **Savepoints** for nested transactions, with ``after_commit`` / ``on_rollback`` hooks scoped
  as on SQLite. An integrity error inside a savepoint rolls back only that savepoint; one in the
  outermost transaction aborts it (PostgreSQL cannot continue a transaction after an error):
  a twin that must carry on after a conflict runs the statement in a nested ``transaction()``
  or says ``ON CONFLICT``.
* **Migrations** run under ``pg_advisory_xact_lock`` of their component, each with its
  bookkeeping row in one transaction: processes starting together on an empty database apply
  each migration once and fail none.
* **Placeholders** are the stores' ``?``, translated once per statement string
  (:mod:`backend.storage.postgres.statements`).
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from backend.errors import StorageError
from backend.storage.database import OpStats
from backend.storage.hooks import TransactionHooks
from backend.storage.postgres.engine import PostgresEngine
from backend.storage.postgres.errors import commit_outcome_error, translated, unavailable
from backend.storage.postgres.migrations import Migration, apply_migrations
from backend.storage.postgres.outcome import (
    BUMP,
    RESOLVE_WAIT_S,
    Witness,
    new_token,
    resolve,
    row_if_any,
)
from backend.storage.postgres.rows import PgResult, PgRow
from backend.storage.postgres.statements import (
    bound_params,
    is_read,
    surrogate_error,
    to_psycopg,
)
from backend.storage.postgres.transaction import ScopeTransaction

_SELECT_VERSION = "SELECT version FROM _scopes WHERE name = %s"
_ENSURE_SCOPE = "INSERT INTO _scopes (name) VALUES (%s) ON CONFLICT (name) DO NOTHING"
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
_TABLE_EXISTS = "SELECT to_regclass(?) IS NOT NULL"
_COMMIT_UNWAITED = "SET LOCAL synchronous_commit = off"


class PostgresScope(TransactionHooks):
    """A scope named ``name`` on ``engine`` (see the module docstring)."""

    engine_kind = "postgresql"

    def __init__(self, engine: PostgresEngine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.path = None  # a scope is no file (stores that print ``db.path`` print None)
        self.lock = threading.RLock()
        self._stats = OpStats()
        self._conn: psycopg.Connection[PgRow] | None = None  # pinned by a transaction
        self._init_hooks()
        self._own_commits = 0
        self._begin_pending = False  # a transaction pinned a connection, no statement yet
        self._witness: Witness | None = None  # the open transaction's, once its bump ran
        self._finished = False  # the open transaction committed early (commit_if_unmoved)
        self.resolve_wait_s = RESOLVE_WAIT_S
        self._closed = False
        # Every pooled connection may have died at once (a server restart): one try each, +1.
        self._attempts = engine.pool.max_size + 1
        with self.lock:
            self._borrowed(lambda conn: conn.execute(_ENSURE_SCOPE, (name,)), _ENSURE_SCOPE)

    # ── connections ─────────────────────────────────────────────────

    def _borrowed(self, use: Callable[[psycopg.Connection[PgRow]], Any], sql: str) -> Any:
        """Run ``use`` on the pinned connection, or on one borrowed for this call."""
        if self._closed:
            raise StorageError(f"cannot operate on a closed scope ({self.name})")
        conn = self._conn
        try:
            if conn is not None:
                if self._begin_pending:
                    return self._begin_with(use)
                return use(conn)
            for attempt in range(self._attempts):
                borrowed = self.engine.connection()
                try:
                    return use(borrowed)
                except psycopg.OperationalError:
                    # A pooled connection the server dropped (restart, idle timeout, failover)
                    # fails its first use. Outside a transaction this is a read (or the
                    # idempotent scope row), so it runs again on the next connection; every
                    # dead one is discarded on the way.
                    if attempt + 1 == self._attempts or not _dead(borrowed):
                        raise
                finally:
                    self.engine.pool.putconn(borrowed)  # a broken one is discarded
            raise AssertionError("unreachable")
        except psycopg.Error as exc:
            raise translated(exc, sql, self.engine.location) from exc
        except PoolTimeout as exc:
            raise unavailable(self.engine.location, exc) from exc
        except UnicodeEncodeError as exc:
            raise surrogate_error(sql) from exc

    def _pin(self) -> psycopg.Connection[PgRow]:
        if self._closed:
            raise StorageError(f"cannot operate on a closed scope ({self.name})")
        try:
            conn = self.engine.connection()
        except (PoolTimeout, psycopg.Error) as exc:
            raise unavailable(self.engine.location, exc) from exc
        self._conn = conn
        return conn

    def _begin_outermost(self) -> None:
        """Pin a connection; ``BEGIN`` and the version bump go out with the transaction's
        first statement (:meth:`_begin_with`), so they cost no round trip of their own."""
        self._pin()
        self._begin_pending = True

    def _begin_with(self, use: Callable[[psycopg.Connection[PgRow]], Any]) -> Any:
        """``BEGIN``, the bump (the scope's write lock, taken before the statement runs) and
        the first statement, in one pipeline. Again on the next connection while pooled ones
        are found dead: nothing of the transaction ran."""
        for attempt in range(self._attempts):
            conn = self._conn
            assert conn is not None
            token = new_token()
            try:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    bump = conn.execute(BUMP, (token, self.name))
                    result = use(conn)
                self._begin_pending = False
                self._witness = Witness.from_bump(token, conn.info.backend_pid, bump.fetchone())
                return result
            except psycopg.OperationalError:
                if attempt + 1 == self._attempts or not _dead(conn):
                    self._begin_pending = False  # BEGIN went out: the exit rolls back
                    raise
                self._unpin()
                self._pin()
            except BaseException:
                self._begin_pending = False  # BEGIN went out: the exit rolls back
                raise
        raise AssertionError("unreachable")

    def _unpin(self) -> None:
        """Give the pinned connection back (the pool rolls back anything left open)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self.engine.pool.putconn(conn)

    # ── statements ──────────────────────────────────────────────────

    def _run(self, sql: str, params: Any) -> PgResult:
        """The choke point (lock held): translate, run, fetch, count."""
        query = to_psycopg(sql)
        if self._conn is not None:
            # In a transaction the connection is this scope's until commit, so the rows are
            # read after ``_borrowed`` returns: a first statement pipelined with the BEGIN
            # (``_begin_with``) has its row count only once the pipeline is synced.
            cursor = self._borrowed(lambda conn: conn.execute(query, bound_params(params)), sql)
            try:
                rows = cursor.fetchall() if cursor.description is not None else []
            except psycopg.Error as exc:
                raise translated(exc, sql, self.engine.location) from exc
            result = PgResult(rows, cursor.rowcount)
        elif not is_read(sql):
            if self._finished:
                raise StorageError("this transaction was committed with its last write")
            result = self._write_alone(sql, query, params)
        else:

            def run(conn: psycopg.Connection[PgRow]) -> PgResult:
                cursor = conn.execute(query, bound_params(params))
                rows = cursor.fetchall() if cursor.description is not None else []
                return PgResult(rows, cursor.rowcount)

            result = self._borrowed(run, sql)
        self._stats.statements += 1
        if is_read(sql):
            self._stats.rows_read += len(result._rows)
        else:
            self._stats.rows_written += max(result.rowcount, 0)
        return result

    def _write_alone(self, sql: str, query: str, params: Any) -> PgResult:
        """A write outside a transaction, committed as a transaction of its own (so it takes
        the scope's write lock and moves its counter) with ``BEGIN``, the bump, the statement
        and ``COMMIT`` sent together: one round trip instead of three (pipeline mode). A
        connection lost on the way leaves the outcome in doubt: it is resolved, never sent
        again blindly (committed, its rows are lost with the reply: the error says so)."""
        conn = self._pin()
        token, backend_pid = new_token(), conn.info.backend_pid
        bump: psycopg.Cursor[PgRow] | None = None
        done = False
        try:
            with conn.pipeline():
                conn.execute("BEGIN")
                bump = conn.execute(BUMP, (token, self.name))
                cursor = conn.execute(query, bound_params(params))
                conn.execute("COMMIT")
            rows = cursor.fetchall() if cursor.description is not None else []
            done = True
        except psycopg.Error as exc:
            raise self._failed_at_once(
                exc, sql, conn, Witness.from_bump(token, backend_pid, row_if_any(bump))
            ) from exc
        except UnicodeEncodeError as exc:
            raise surrogate_error(sql) from exc
        finally:
            if not done and not conn.closed:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")
            self._unpin()
        self._own_commits += 1
        self._stats.statements += 1  # the BEGIN, as a transaction counts it
        return PgResult(rows, cursor.rowcount)

    def _failed_at_once(
        self, exc: psycopg.Error, sql: str, conn: psycopg.Connection[PgRow], witness: Witness
    ) -> Exception:
        """The error of a transaction sent whole, ``COMMIT`` included, that failed: the
        statement's own error, or, when the connection was lost on the way, the resolved
        outcome (committed: its reply, rows and all, was lost with the connection)."""
        if not _dead(conn):
            return translated(exc, sql, self.engine.location)
        self._unpin()
        self._settle_lost_commit(witness, exc)
        return commit_outcome_error("committed", self.engine.location, exc)

    @property
    def nothing_sent(self) -> bool:
        """In an outermost transaction that has sent no statement yet (so it holds no lock and
        :meth:`commit_if_unmoved` may still do all of it)."""
        return self._begin_pending and self._depth == 1

    def commit_if_unmoved(self, sql: str, params: Sequence[Any], data_version: int) -> PgRow | None:
        """Do a whole write transaction in one round trip, if nobody else committed to the
        scope since :meth:`data_version` read ``data_version``.

        ``sql`` begins with :data:`~backend.storage.postgres.outcome.GUARDED_BUMP` (its first three
        parameters are this method's: leave them out of ``params``) and writes only ``FROM bump``;
        it returns one row when its bump matched, whose ``written`` column counts the rows it wrote
        (for :attr:`stats`). The statement is sent alone, its own transaction (the connection is in
        autocommit). Returns that row (committed: this scope's write lock was held as by any write
        transaction, and its counter moved), or None when someone else committed in between: nothing
        was written, and the caller catches up and writes the usual way. Called inside an outermost
        transaction that has sent nothing yet, the transaction is finished by it: nothing more may
        be written in it, and its exit runs its after-commit hooks (a failure raised after the
        commit still runs them: the write is there). A connection lost on the way is resolved as a
        lone write's is.
        """
        with self.lock:
            pending = self.nothing_sent
            if self._conn is not None and not pending:
                raise StorageError("commit_if_unmoved must begin its transaction")
            conn = self._conn if pending else self._pin()
            assert conn is not None
            token, backend_pid = new_token(), conn.info.backend_pid
            expected = data_version + self._own_commits
            cursor: psycopg.Cursor[PgRow] | None = None
            try:
                # One statement on an autocommit connection is a transaction of its own,
                # committed at the end of the request: no BEGIN and COMMIT of its own to
                # send, so the whole write leaves in one packet and the server wakes once.
                cursor = conn.execute(to_psycopg(sql), (token, self.name, expected, *params))
                row = cursor.fetchone()
            except psycopg.Error as exc:
                self._begin_pending = False
                raise self._failed_at_once(
                    exc, sql, conn, Witness.from_bump(token, backend_pid, row_if_any(cursor))
                ) from exc
            except UnicodeEncodeError as exc:  # found while encoding: nothing was sent
                self._begin_pending = False
                raise surrogate_error(sql) from exc
            finally:
                if not pending:
                    self._unpin()
            self._stats.statements += 2  # a transaction counts its BEGIN, this one's implicit
            if row is None:
                return None  # moved: nothing written; a pending transaction is still pending
            self._own_commits += 1
            self._stats.rows_written += int(row["written"])
            if pending:
                self._begin_pending = False
                self._finished = True
                self._unpin()
            return row

    def _commit(self) -> None:
        """``COMMIT`` the outermost transaction (lock held). A reply lost with the connection
        is resolved: committed is success, anything else a ``CommitOutcomeError`` saying it."""
        conn, witness = self._conn, self._witness
        assert conn is not None
        try:
            conn.execute("COMMIT")
        except psycopg.Error as exc:
            if not _dead(conn) or witness is None:
                self._rollback_outermost()
                raise translated(exc, "COMMIT", self.engine.location) from exc
            self._unpin()
            try:
                self._settle_lost_commit(witness, exc)
            except BaseException:
                self._rollback_outermost()
                raise
        except BaseException:
            self._rollback_outermost()
            raise
        self._witness = None
        self._own_commits += 1

    def _settle_lost_commit(self, witness: Witness, exc: psycopg.Error) -> None:
        """Return when ``witness``'s commit is found committed; raise the outcome otherwise."""
        outcome = resolve(self.engine, self.name, witness, self.resolve_wait_s)
        self.engine.count_lost_commit(outcome)
        if outcome != "committed":
            raise commit_outcome_error(outcome, self.engine.location, exc) from exc

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgResult:
        with self.lock:
            return self._run(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One statement once per row, in one transaction (one counted statement)."""
        query = to_psycopg(sql)
        batch = [bound_params(row) for row in rows]
        with self.lock, self.transaction():

            def run(conn: psycopg.Connection[PgRow]) -> int:
                with conn.cursor() as cursor:
                    cursor.executemany(query, batch)
                    return cursor.rowcount

            if self._begin_pending:  # begin first: rowcount is not summed inside a pipeline
                self._borrowed(lambda conn: None, "BEGIN")
            written: int = self._borrowed(run, sql)
            self._stats.statements += 1
            self._stats.rows_written += max(written, 0)

    def write(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> int:
        with self.lock:
            return self._run(sql, params).rowcount

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[PgRow]:
        with self.lock:
            rows = self._run(sql, params).fetchall()
            return rows

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgRow | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    def iterate(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Iterator[PgRow]:
        """The rows of one statement (fetched whole: a pooled connection is not kept open
        while a caller walks them)."""
        yield from self.query(sql, params)

    def table_exists(self, name: str) -> bool:
        row = self.query_one(_TABLE_EXISTS, (name,))
        return bool(row and row[0])

    # ── change detection ────────────────────────────────────────────

    def data_version(self) -> int:
        """Commits others made to this scope (moves only when someone else committed); the
        same number inside this scope's own write transaction as before it.

        Inside a write transaction it costs no round trip: the transaction's bump returned
        the version (its witness), and nobody else can move it before this one ends (a
        first statement, when none ran yet, is only ``BEGIN`` and the bump)."""
        with self.lock:
            if self._conn is not None and self._depth and not self._finished:
                if self._begin_pending:
                    self._borrowed(lambda conn: None, "BEGIN")
                witness = self._witness
                if witness is not None and witness.version is not None:
                    self._stats.statements += 1
                    return witness.version - self._own_commits - 1

            def read(conn: psycopg.Connection[PgRow]) -> int:
                row = conn.execute(_SELECT_VERSION, (self.name,)).fetchone()
                return int(row[0]) if row is not None else 0

            version: int = self._borrowed(read, _SELECT_VERSION)
            self._stats.statements += 1
            # Inside a write transaction the row already holds its own bump (taken with its
            # first statement, this read at the latest), not yet counted in _own_commits.
            return version - self._own_commits - (1 if self._depth and not self._finished else 0)

    @property
    def stats(self) -> OpStats:
        return self._stats

    # ── transactions ────────────────────────────────────────────────

    def transaction(self) -> ScopeTransaction[PostgresScope]:
        """Reentrant write transaction (``with scope.transaction() as db:`` binds the scope)."""
        return ScopeTransaction(self)

    @contextlib.contextmanager
    def derived_transaction(self) -> Iterator[PostgresScope]:
        """A write transaction of rows rebuilt after any loss (a message's vector): its commit
        waits for neither the WAL flush nor a standby. Inside another transaction it joins it."""
        with self.transaction():
            if self._depth == 1:
                self.execute(_COMMIT_UNWAITED)
            yield self

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PostgresScope]:
        """A read transaction: every query inside sees one committed state; inside a
        transaction of this scope it simply joins it."""
        with self.lock:
            if self._conn is not None:
                yield self
                return
            conn = self._pin()
            failed = True
            try:
                self._borrowed(lambda c: c.execute(_BEGIN_READ), _BEGIN_READ)
                yield self
                failed = False
            finally:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK" if failed else "COMMIT")
                self._unpin()

    def _rollback_savepoint(self, depth: int, marks: tuple[int, int]) -> None:
        sql = f"ROLLBACK TO SAVEPOINT sp_{depth}; RELEASE SAVEPOINT sp_{depth}"
        self._borrowed(lambda conn: conn.execute(sql), sql)
        self._undo_savepoint_hooks(marks)

    def _rollback_outermost(self) -> None:
        callbacks = self._take_rollback_hooks()
        conn = self._conn
        if conn is not None and not self._begin_pending:
            with contextlib.suppress(psycopg.Error):
                conn.execute("ROLLBACK")
        self._begin_pending = False
        self._witness = None
        self._unpin()
        for callback in callbacks:
            callback()

    # ── schema ──────────────────────────────────────────────────────

    def migrate(self, component: str, migrations: Sequence[Migration]) -> list[str]:
        """Apply ``component``'s not-yet-applied migrations under its advisory lock, in few
        round trips (:mod:`backend.storage.postgres.migrations`)."""
        return apply_migrations(self, component, migrations, _lock_key(component))

    # ── lifecycle ───────────────────────────────────────────────────

    def close(self) -> None:
        """Close the scope (the pool is the engine's, shared by every scope)."""
        with self.lock:
            self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed


def _dead(conn: psycopg.Connection[PgRow]) -> bool:
    return conn.closed or conn.broken


def _lock_key(component: str) -> int:
    """A stable 32-bit advisory lock key per migration component."""
    return zlib.crc32(f"chats:migrate:{component}".encode())
