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

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from backend.config import PostgresLocation, Settings
from backend.errors import ConfigurationError
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


_engines_lock = threading.Lock()
_engines: dict[str, list] = {}  # url → [engine, open storage objects]


# Engines that hold every store the app and the CLI open. PostgreSQL holds accounts, model
# endpoints and agents so far; a person's directory and conversations still live in files
# (docs/architecture.md, "Storage engines", says what remains).
COMPLETE_ENGINES: frozenset[EngineKind] = frozenset({"sqlite"})


def check_complete_engine(settings: Settings) -> None:
    """Refuse to serve or run the CLI on an engine that does not yet hold every store.

    Half an installation in PostgreSQL and half in the data folder would look like a
    deployment that needs no shared disk while it does: a second machine would see the
    accounts but none of the chats. The message names the server, never its password.
    """
    if isinstance(settings.storage, PostgresLocation) and "postgresql" not in COMPLETE_ENGINES:
        raise ConfigurationError(
            "CHATS_STORAGE",
            f"CHATS_STORAGE names PostgreSQL ({settings.storage}), whose engine does not hold "
            "chats and conversations yet (only accounts, model endpoints and agents); "
            "unset CHATS_STORAGE to run on the data folder",
        )


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
