"""Where a conversation lives: a file, or the PostgreSQL scope its path names.

``Sessions(path)`` keeps the SPEC signature on both engines. ``CHATS_STORAGE`` (read here,
through :func:`backend.config.parse_storage`, and nowhere else in this package) picks the
engine: unset or ``sqlite``, ``path`` is the SQLite file; a ``postgresql://`` URL, ``path``
names the scope ``os.path.abspath(path)`` on that database (the file SQLite would use, suffix
included), and nothing is created, read or removed on disk. ``":memory:"`` is a private
in-memory SQLite database on both engines: it names no place another process could share.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from backend.config import PostgresLocation, StorageChoice, parse_storage
from backend.sessions.store import SessionStore
from backend.storage import Database, Scope
from backend.storage.engines import PostgresStorage, Storage

MEMORY = ":memory:"


def configured_storage() -> StorageChoice:
    """The engine ``CHATS_STORAGE`` names now (``"sqlite"`` when unset)."""
    return parse_storage(os.environ.get("CHATS_STORAGE", ""))


def scope_name(path: str | Path) -> str:
    """The PostgreSQL scope of the conversation SQLite would keep in file ``path``."""
    return os.path.abspath(os.fspath(path))


@dataclass(frozen=True)
class OpenedConversation:
    """A conversation's scope and, on PostgreSQL, the engine reference that keeps its pool."""

    scope: Scope
    storage: Storage | None

    def close(self) -> None:
        self.scope.close()
        if self.storage is not None:
            self.storage.close()


def open_conversation(path: str | Path) -> OpenedConversation:
    """The scope of the conversation at ``path`` on the configured engine."""
    storage = configured_storage()
    if not isinstance(storage, PostgresLocation) or os.fspath(path) == MEMORY:
        return OpenedConversation(Database(path), None)
    engine = PostgresStorage(storage)
    try:
        return OpenedConversation(engine.open_scope(scope_name(path)), engine)
    except BaseException:
        engine.close()
        raise


def store_class(scope: Scope) -> type[SessionStore]:
    """The store twin made for ``scope``'s engine (the PostgreSQL one loads psycopg)."""
    if scope.engine_kind == "postgresql":
        from backend.sessions.pg_store import PgSessionStore

        return PgSessionStore
    return SessionStore
