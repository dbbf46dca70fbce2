"""ScopeKeyed: a PostgreSQL scope whose statements all lead with the scope's name.

On SQLite a conversation is a file and its tables hold one conversation; on PostgreSQL one set
of tables holds every conversation, each row keyed first by its scope (the path SQLite would
use, ``docs/architecture.md`` "Storage engines"). The sessions stores run the same methods on
both engines; their PostgreSQL twins only rewrite the statements, each taking the scope as its
first parameter. This wrapper binds it: every statement it runs gets ``scope.name`` put before
the store's own parameters, so no method of a store has to know which engine it runs on.

A statement whose natural first parameter is not the scope (an ``UPDATE ... SET ? ...``, an
``INSERT ... SELECT``) takes it through a one-row CTE first (``WITH k AS (SELECT ?::text AS
scope)``). A read led by ``WITH`` is wrapped as ``SELECT * FROM (WITH ...)``: the scope runs a
statement it cannot recognise as a read in a write transaction of its own.

Everything else (transactions, hooks, the lock, migrations) is the scope's own;
:meth:`data_version` is read once per transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from backend.storage import OpStats, Row
from backend.storage.postgres import PostgresScope
from backend.storage.scope import Params, ResultCursor

SCOPE_CTE = "WITH k AS (SELECT ?::text AS scope) "
"""Puts the scope first in a statement whose first placeholder would be something else."""


class ScopeKeyed:
    """``scope`` with its name bound as the first parameter of every statement."""

    engine_kind = "postgresql"

    def __init__(self, scope: PostgresScope) -> None:
        self.scope = scope
        self.name = scope.name
        self.lock: threading.RLock = scope.lock
        self._key = (scope.name,)
        self._version_in_transaction: int | None = None

    def _keyed(self, params: Params) -> tuple[Any, ...]:
        if isinstance(params, dict):
            raise TypeError("the sessions twins bind positional parameters only")
        return (*self._key, *params)

    def execute(self, sql: str, params: Params = ()) -> ResultCursor:
        return self.scope.execute(sql, self._keyed(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.scope.executemany(sql, (self._keyed(row) for row in rows))

    def write(self, sql: str, params: Params = ()) -> int:
        return self.scope.write(sql, self._keyed(params))

    def query(self, sql: str, params: Params = ()) -> Sequence[Row]:
        return self.scope.query(sql, self._keyed(params))

    def query_one(self, sql: str, params: Params = ()) -> Row | None:
        return self.scope.query_one(sql, self._keyed(params))

    def iterate(self, sql: str, params: Params = ()) -> Iterator[Row]:
        return self.scope.iterate(sql, self._keyed(params))

    def commit_if_unmoved(self, sql: str, params: Params, data_version: int) -> Row | None:
        """:meth:`PostgresScope.commit_if_unmoved`, the scope's name first in ``params``."""
        return self.scope.commit_if_unmoved(sql, self._keyed(params), data_version)

    @property
    def nothing_sent(self) -> bool:
        return self.scope.nothing_sent

    def transaction(self) -> AbstractContextManager[Any]:
        return self.scope.transaction()

    def derived_transaction(self) -> AbstractContextManager[Any]:
        return self.scope.derived_transaction()

    def snapshot(self) -> AbstractContextManager[Any]:
        return self.scope.snapshot()

    def after_commit(self, callback: Callable[[], None]) -> None:
        self.scope.after_commit(callback)

    def on_rollback(self, callback: Callable[[], None]) -> None:
        self.scope.on_rollback(callback)

    @property
    def in_transaction(self) -> bool:
        return self.scope.in_transaction

    @property
    def stats(self) -> OpStats:
        return self.scope.stats

    def data_version(self) -> int:
        """The scope's (others' commits), read once per write transaction: a round trip saved
        on every write of a bulk import."""
        if not self.scope.in_transaction:
            return self.scope.data_version()
        if self._version_in_transaction is None:
            # Nobody else can commit to the scope until this transaction ends (it holds the
            # scope's write lock from its first statement): one read serves all its writes.
            self._version_in_transaction = self.scope.data_version()
            self.scope.after_commit(self._end_of_transaction)
            self.scope.on_rollback(self._end_of_transaction)
        return self._version_in_transaction

    def _end_of_transaction(self) -> None:
        self._version_in_transaction = None

    def migrate(self, component: str, migrations: Sequence[Callable[[Any], None]]) -> list[str]:
        return self.scope.migrate(component, migrations)

    def close(self) -> None:
        self.scope.close()

    @property
    def closed(self) -> bool:
        return self.scope.closed
