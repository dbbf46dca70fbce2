"""Where a directory's database lives on each engine, and which store twin runs on it.

On SQLite a directory is the file ``<root>/<directory_id>/directory.sqlite`` (three
connections: the writer, the searches', the shared attachments' reader). On PostgreSQL it is
the scope named as that file (the absolute path, ``scope_name``): nothing is created or read
on disk, and the same root and directory id reopened name the same scope on every machine.

A store is picked for the scope's engine by :func:`record_store_for` (this package's chat
index); the stores of the directory's other parts follow the twin convention of
docs/architecture.md, "Storage engines" (:func:`twin_of`).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from backend.chats.chat_records import ChatRecordStore
from backend.config import PostgresLocation, Settings, StorageChoice
from backend.errors import ConfigurationError
from backend.storage import Database, Scope
from backend.storage.engines import PostgresStorage

_T = TypeVar("_T")


def scope_name(sqlite_file: Path) -> str:
    """The PostgreSQL scope holding what SQLite keeps in ``sqlite_file``: its absolute path."""
    return os.path.abspath(os.fspath(sqlite_file))


def configured_storage() -> StorageChoice:
    """``CHATS_STORAGE`` of this process (``backend.config`` reads and checks it)."""
    return Settings.from_env().storage


@dataclass
class DirectoryScopes:
    """The directory's writer scope and its two readers (searches; shared attachments)."""

    database: Scope
    search: Scope
    pool_reader: Scope
    storage: PostgresStorage | None = None  # the engine handle on PostgreSQL, closed last

    @classmethod
    def open(cls, storage: StorageChoice, database_path: Path) -> DirectoryScopes:
        if not isinstance(storage, PostgresLocation):
            # Readers open at their first statement: most open directories (a person's idle
            # tabs) never search nor read a shared attachment.
            writer = Database(database_path)
            return cls(
                writer,
                Database(database_path, on_demand=True),
                Database(database_path, on_demand=True),
            )
        engine = PostgresStorage(storage)
        opened: list[Scope] = []
        try:
            name = scope_name(database_path)
            for _ in range(3):  # each its own lock: a search never waits for a writer
                opened.append(engine.open_scope(name))
        except BaseException:
            for scope in opened:
                scope.close()
            engine.close()
            raise
        return cls(opened[0], opened[1], opened[2], engine)

    def close(self) -> None:
        for scope in (self.database, self.search, self.pool_reader):
            scope.close()
        if self.storage is not None:
            self.storage.close()


def record_store_for(database: Scope, search: Scope | None = None) -> ChatRecordStore:
    """The chat index's store twin for the scope's engine (psycopg loads on PostgreSQL only)."""
    if database.engine_kind == "postgresql":
        from backend.chats.pg_chat_records import PgChatRecordStore
        from backend.storage.postgres import PostgresScope

        assert isinstance(database, PostgresScope)
        assert search is None or isinstance(search, PostgresScope)
        return PgChatRecordStore(database, search)
    return ChatRecordStore(database, search)


def twin_of(store: type[_T], scope: Scope) -> type[_T]:
    """``store`` itself on SQLite; on PostgreSQL its twin ``Pg<Name>`` in ``pg_<module>``
    beside it (the decisions' convention), or a clear error while it has none."""
    if scope.engine_kind != "postgresql":
        return store
    package, _, module = store.__module__.rpartition(".")
    twin_module = f"{package}.pg_{module}"
    try:
        found: Any = getattr(importlib.import_module(twin_module), f"Pg{store.__name__}")
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            "CHATS_STORAGE",
            f"{store.__name__} has no PostgreSQL twin yet ({twin_module}.Pg{store.__name__}); "
            "unset CHATS_STORAGE to keep this directory in the data folder",
        ) from exc
    return found
