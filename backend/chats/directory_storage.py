"""Where a directory's database lives on each engine, and which store twin runs on it.

On SQLite a directory is the file ``<root>/<directory_id>/directory.sqlite`` (three
connections: the writer, the searches', the shared attachments' reader). On PostgreSQL it is
the scope named as that file (the absolute path, ``scope_name``): nothing is created or read
on disk, and the same root and directory id reopened name the same scope on every machine.

A store is picked for the scope's engine by :func:`record_store_for` (the chat index) and
:func:`chat_files_for` (which chat generations have storage); the directory's other stores
by their own modules' ``*_for`` functions.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from backend.chats.chat_records import ChatRecordStore
from backend.chats.layout import ChatFiles, DirectoryLayout, FolderChatFiles
from backend.config import PostgresLocation, StorageChoice, parse_storage
from backend.errors import ConfigurationError
from backend.storage import Database, Scope
from backend.storage.engines import PostgresStorage

_T = TypeVar("_T")


def scope_name(sqlite_file: Path) -> str:
    """The PostgreSQL scope holding what SQLite keeps in ``sqlite_file``: its absolute path."""
    return os.path.abspath(os.fspath(sqlite_file))


def configured_storage() -> StorageChoice:
    """The engine ``CHATS_STORAGE`` names now (``"sqlite"`` when unset), read by
    ``backend.config``'s own parser (only that variable: others' mistakes are not ours)."""
    return parse_storage(os.environ.get("CHATS_STORAGE", ""))


def directory_storage(explicit: StorageChoice | None) -> StorageChoice:
    """The engine of a directory: ``explicit``, which must be the process's own.

    The conversations a directory opens (``Sessions(path)``, here and in the message index)
    read ``CHATS_STORAGE``: a directory on another engine would keep its chat index in one
    place and its conversations in another, so that is refused, naming both (no password).
    """
    configured = configured_storage()
    if explicit is None or explicit == configured:
        return configured
    raise ConfigurationError(
        "CHATS_STORAGE",
        f"a directory on {explicit} while CHATS_STORAGE names {configured}: its conversations "
        "would live on the other engine; set CHATS_STORAGE to the directory's engine",
    )


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


def chat_files_for(database: Scope, layout: DirectoryLayout) -> ChatFiles:
    """Which chat generations have storage: the ``chats/`` folder, or rows on PostgreSQL."""
    if database.engine_kind == "postgresql":
        from backend.chats.pg_layout import PgChatFiles
        from backend.storage.postgres import PostgresScope

        assert isinstance(database, PostgresScope)
        return PgChatFiles(database, layout)
    return FolderChatFiles(layout)


def twin_of(store: type[_T], scope: Scope) -> type[_T]:
    """``store`` itself on SQLite; on PostgreSQL its twin ``Pg<Name>`` in ``pg_<module>``
    beside it (one naming rule for every twin), or a clear error while it has none."""
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
