"""``CHATS_STORAGE`` made real: the engine a process's stores open their scopes on.

* :class:`SqliteStorage`: a scope is a file ``<data_dir>/<name>.sqlite`` (a
  :class:`~backend.storage.Database`, exactly as before).
* :class:`PostgresStorage`: a scope is a :class:`~backend.storage.postgres.PostgresScope`
  named ``name`` on one shared :class:`~backend.storage.postgres.PostgresEngine` per database
  URL per process; the pool lives while any storage object on that URL is open, and closes
  with the last (so a test's database can be dropped once its services closed).

A package picks its store twin by :attr:`kind` (``"sqlite"`` / ``"postgresql"``): the SQL
lives with the package that owns the tables, not here.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from backend.config import PostgresLocation, Settings
from backend.storage.database import Database
from backend.storage.scope import Scope

EngineKind = Literal["sqlite", "postgresql"]
_S = TypeVar("_S")


class Storage(Protocol):
    """Where one service's scopes live; ``close`` releases what it holds (not the scopes)."""

    @property
    def kind(self) -> EngineKind: ...

    def open_scope(self, name: str) -> Scope: ...

    def close(self) -> None: ...


class SqliteStorage:
    """Scopes as files under ``data_dir`` (the default engine)."""

    kind: EngineKind = "sqlite"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def path_of(self, name: str) -> Path:
        return self.data_dir / f"{name}.sqlite"

    def open_scope(self, name: str) -> Database:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return Database(self.path_of(name))

    def close(self) -> None:
        """Nothing to release: each file is its scope's own."""


class PostgresStorage:
    """Scopes on the database ``location`` names (one pool per URL per process)."""

    kind: EngineKind = "postgresql"

    def __init__(self, location: PostgresLocation) -> None:
        from backend.storage.postgres import PostgresEngine

        self.location = location
        with _engines_lock:
            entry = _engines.get(location.url)
            if entry is None:
                entry = _engines[location.url] = [PostgresEngine(location), 0]
            entry[1] += 1
        self.engine: PostgresEngine = entry[0]
        self._closed = False

    def open_scope(self, name: str) -> Scope:
        from backend.storage.postgres import PostgresScope

        return PostgresScope(self.engine, name)

    def scope_names(self, prefix: str) -> list[str]:
        """The names of the scopes ever opened here that begin with ``prefix``, sorted: what a
        walk over the data folder's files finds on SQLite (a directory per person...)."""
        import psycopg

        from backend.storage.postgres.errors import translated

        try:
            with self.engine.pool.connection() as conn:
                rows = conn.execute(_SCOPES_UNDER, (_like_prefix(prefix),)).fetchall()
        except psycopg.Error as exc:
            raise translated(exc, _SCOPES_UNDER, self.location) from exc
        return [row[0] for row in rows]

    def close(self) -> None:
        with _engines_lock:
            if self._closed:
                return
            self._closed = True
            entry = _engines[self.location.url]
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _engines[self.location.url]
        self.engine.close()


_SCOPES_UNDER = "SELECT name FROM _scopes WHERE name LIKE %s ORDER BY name"


def _like_prefix(prefix: str) -> str:
    """A ``LIKE`` pattern matching the names that begin with ``prefix`` exactly."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


_engines_lock = threading.Lock()
_engines: dict[str, list] = {}  # url → [engine, open storage objects]


def is_storage_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the storage engine cannot be reached (PostgreSQL gone away, or a
    commit lost with its connection): what a person is told as "storage unavailable".

    Without importing the PostgreSQL engine: when it was never loaded, none of its errors
    can have been raised (and a SQLite process never loads psycopg).
    """
    errors = sys.modules.get("backend.storage.postgres.errors")
    return errors is not None and isinstance(exc, errors.StorageUnavailableError)


def check_storage(settings: Settings) -> None:
    """Reach the configured engine now, at start: a PostgreSQL server that cannot be reached
    is a ``StorageUnavailableError`` naming host and database (never the password), one too
    old an ``UnsupportedServerError`` naming its version. SQLite has nothing to reach (its
    files open on first use)."""
    if isinstance(settings.storage, PostgresLocation):
        open_storage(settings).close()


def open_storage(settings: Settings) -> Storage:
    """The engine ``settings.storage`` names (PostgreSQL: reached and checked now).

    Typed ``Storage``: mypy checks here that both engines (and so ``Database`` and
    ``PostgresScope``) keep the ``Scope`` contract.
    """
    if isinstance(settings.storage, PostgresLocation):
        return PostgresStorage(settings.storage)
    return SqliteStorage(settings.data_dir)


@dataclass(frozen=True)
class OpenedStore(Generic[_S]):
    """A store on its scope on its engine; ``close`` closes all three, in that order."""

    storage: Storage
    scope: Scope
    store: _S

    def close(self) -> None:
        self.scope.close()
        self.storage.close()


def open_store(
    settings: Settings, name: str, stores: Mapping[EngineKind, Callable[[Scope], _S]]
) -> OpenedStore[_S]:
    """Open scope ``name`` on the configured engine and the store twin made for that engine
    (``stores[kind]``); on any failure nothing is left open."""
    storage = open_storage(settings)
    try:
        scope = storage.open_scope(name)
        try:
            return OpenedStore(storage, scope, stores[storage.kind](scope))
        except BaseException:
            scope.close()
            raise
    except BaseException:
        storage.close()
        raise
