"""The directory's ``chats`` rows as the message index reads them, for store-level tests.

The index's search joins the chat records (``chats``: ``num``, ``id``, ``deleted_at``; on
PostgreSQL keyed by ``(scope, num)``) to leave deleted chats out. These tests exercise the
index stores alone, so they write just those columns, on either engine, in the shape the chat
records' stores give them.
"""

from __future__ import annotations

from backend.storage import Scope

_SQLITE_TABLE = (
    "CREATE TABLE IF NOT EXISTS chats (num INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
    "deleted_at INTEGER, purged_at INTEGER)"
)
_POSTGRES_TABLE = (
    'CREATE TABLE IF NOT EXISTS chats (scope text COLLATE "C" NOT NULL, num bigint NOT NULL, '
    'id text COLLATE "C" NOT NULL, deleted_at bigint, purged_at bigint, '
    "PRIMARY KEY (scope, num))"
)


class DirectoryChats:
    """Chat rows of one directory scope: added live, deleted by number."""

    def __init__(self, db: Scope) -> None:
        self.db = db
        self._postgres = db.engine_kind == "postgresql"
        self._key: tuple[object, ...] = (getattr(db, "name", ""),) if self._postgres else ()
        db.execute(_POSTGRES_TABLE if self._postgres else _SQLITE_TABLE)

    def add(self, num: int, chat_id: str) -> None:
        columns = "scope, num, id" if self._postgres else "num, id"
        marks = ", ".join("?" for _ in columns.split(","))
        self.db.execute(
            f"INSERT INTO chats ({columns}) VALUES ({marks})", (*self._key, num, chat_id)
        )

    def delete(self, num: int, now_ms: int = 1) -> None:
        where = "scope = ? AND num = ?" if self._postgres else "num = ?"
        self.db.execute(f"UPDATE chats SET deleted_at = ? WHERE {where}", (now_ms, *self._key, num))
