"""Where imported chats came from: one row per source conversation. SQL only.

Table (component ``chats.sources``, in the directory database)::

    chat_sources(format, source_id) PK  num, digest, complete, imported_at   WITHOUT ROWID

``(format, source_id)`` names a conversation of another system (``chatgpt`` + its
conversation id) or of an export of this one (``chats`` + the exported chat id); ``num`` is
the chat (``chats.num``) it was imported into. ``digest`` fingerprints the source content the
chat holds, so importing the same file again is a no-op read of this table. ``complete`` is 0
while the import writes the chat's messages: a crash leaves it 0, and the next import of that
source resumes into the same chat instead of making a second one.

Callers (``backend.chats.imports``) own transactions and events. The PostgreSQL twin
(:mod:`backend.chats.pg_sources`) keeps these methods and rewrites the statements to take the
directory's scope first (``_key``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.storage import Database, Scope

COMPONENT = "chats.sources"


def _m001_chat_sources(db: Database) -> None:
    db.execute(
        """
        CREATE TABLE chat_sources (
            format TEXT NOT NULL,
            source_id TEXT NOT NULL,
            num INTEGER NOT NULL,
            digest TEXT NOT NULL,
            complete INTEGER NOT NULL DEFAULT 0,
            imported_at INTEGER NOT NULL,
            PRIMARY KEY (format, source_id)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX chat_sources_by_chat ON chat_sources (num)")


MIGRATIONS = (_m001_chat_sources,)


@dataclass(frozen=True, slots=True)
class SourceRow:
    num: int
    digest: str
    complete: bool


class SourceStore:
    """SQL for ``chat_sources`` on the directory's Database."""

    migrations: tuple[Any, ...] = MIGRATIONS

    def __init__(self, db: Scope) -> None:
        self.db = db
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    _SELECT = "SELECT num, digest, complete FROM chat_sources WHERE format = ? AND source_id = ?"

    def load(self, format: str, source_id: str) -> SourceRow | None:
        row = self.db.query_one(self._SELECT, (*self._key, format, source_id))
        return SourceRow(row[0], row[1], bool(row[2])) if row else None

    _SELECT_BY_CHAT = "SELECT format, source_id FROM chat_sources WHERE num = ? LIMIT 1"

    def source_of(self, num: int) -> tuple[str, str] | None:
        row = self.db.query_one(self._SELECT_BY_CHAT, (*self._key, num))
        return (row[0], row[1]) if row else None

    _UPSERT = (
        "INSERT INTO chat_sources (format, source_id, num, digest, complete, imported_at) "
        "VALUES (?, ?, ?, ?, 0, ?) ON CONFLICT (format, source_id) DO UPDATE SET "
        "num = excluded.num, digest = excluded.digest, complete = 0, "
        "imported_at = excluded.imported_at"
    )

    def begin(self, format: str, source_id: str, num: int, digest: str, now_ms: int) -> None:
        """Point the source at ``num``, marked incomplete until :meth:`complete`."""
        self.db.execute(self._UPSERT, (*self._key, format, source_id, num, digest, now_ms))

    _COMPLETE = "UPDATE chat_sources SET complete = 1 WHERE format = ? AND source_id = ?"

    def complete(self, format: str, source_id: str) -> None:
        self.db.execute(self._COMPLETE, (*self._key, format, source_id))
