"""What a store may use of its database, whichever engine holds it: the :class:`Scope`.

A *scope* is what one SQLite file is today: the unit of transactions, of the write lock, of
change detection and of migrations. :class:`backend.storage.Database` (one SQLite file) is a
scope as it stands, unchanged; :class:`backend.storage.postgres.PostgresScope` is one over a
shared PostgreSQL connection pool. A store typed against ``Scope`` runs on both; a store's
PostgreSQL *twin* (same package, same methods) holds the SQL that differs.

The contract, beyond the signatures:

* **Placeholders** are ``?`` (qmark) in every statement, on both engines.
* **Rows** answer ``row[0]`` and ``row["name"]`` (:class:`Row`); a cursor from ``execute``
  is already complete (``fetchone`` / ``fetchall`` / ``rowcount``), never lazy.
* **Transactions** are reentrant: the outermost takes the scope's write lock up front
  (SQLite ``BEGIN IMMEDIATE``; PostgreSQL a row lock on the scope's version row), nested ones
  are savepoints; ``after_commit`` callbacks run once the outermost commits, ``on_rollback``
  ones when it (or their savepoint) rolls back. ``lock`` is held from begin to commit.
  ``derived_transaction()`` is one for rows rebuilt after any loss (vectors): its commit
  does not wait for the disk (SQLite: no ``fsync``; PostgreSQL: ``synchronous_commit`` off).
* **``data_version()``** moves when *another* connection or process has committed to the
  scope since this one last looked, never for this scope's own commits (SQLite's
  ``PRAGMA data_version``; PostgreSQL counts foreign commits on the scope's version row).
* **Integrity errors** (unique or check violations) are :data:`IntegrityError` on both
  engines; every other failure is a :class:`backend.errors.StorageError`.
* **Text** must follow :mod:`backend.storage.text` (no lone surrogates, no U+0000).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from backend.storage.database import OpStats

IntegrityError = sqlite3.IntegrityError
"""The one integrity error of the contract: SQLite raises it as is, the PostgreSQL scope
raises it chained from psycopg's (so every store's ``except`` stays as it is)."""

Params = Sequence[Any] | dict[str, Any]


class Row(Protocol):
    """One result row: by position and by column name."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __len__(self) -> int: ...

    def keys(self) -> list[str]: ...


class ResultCursor(Protocol):
    """What ``execute`` hands back: its rows, already fetched, and its row count."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Scope(Protocol):
    """The engine-neutral database of one store (see the module docstring)."""

    engine_kind: str  # "sqlite" or "postgresql": which twin of a store to run on it
    lock: threading.RLock

    def execute(self, sql: str, params: Params = ...) -> ResultCursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def write(self, sql: str, params: Params = ...) -> int: ...

    def query(self, sql: str, params: Params = ...) -> Sequence[Row]: ...

    def query_one(self, sql: str, params: Params = ...) -> Row | None: ...

    def iterate(self, sql: str, params: Params = ...) -> Iterator[Row]: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def derived_transaction(self) -> AbstractContextManager[Any]: ...

    def snapshot(self) -> AbstractContextManager[Any]: ...

    def after_commit(self, callback: Callable[[], None]) -> None: ...

    def on_rollback(self, callback: Callable[[], None]) -> None: ...

    @property
    def in_transaction(self) -> bool: ...

    @property
    def stats(self) -> OpStats: ...

    def data_version(self) -> int: ...

    def migrate(self, component: str, migrations: Sequence[Callable[[Any], None]]) -> list[str]: ...

    def close(self) -> None: ...

    @property
    def closed(self) -> bool: ...
