"""Where imported chats came from, on PostgreSQL: the twin of :mod:`backend.chats.sources`.

One ``chat_sources`` table holds every person's import sources, each row and key led by
``scope`` (the name of the person's directory scope), the first parameter of every
statement. The methods and their meaning (a source resumes into the chat it began while
``complete`` is false) are the SQLite store's.
"""

from __future__ import annotations

from backend.chats.sources import SourceStore
from backend.storage import Scope
from backend.storage.postgres import PostgresScope


def _m001_chat_sources(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE chat_sources (
            scope text COLLATE "C" NOT NULL,
            format text COLLATE "C" NOT NULL,
            source_id text COLLATE "C" NOT NULL,
            num bigint NOT NULL,
            digest text NOT NULL,
            complete boolean NOT NULL DEFAULT false,
            imported_at bigint NOT NULL,
            PRIMARY KEY (scope, format, source_id)
        )
        """
    )
    db.execute("CREATE INDEX chat_sources_by_chat ON chat_sources (scope, num)")


class PgSourceStore(SourceStore):
    """``chat_sources`` on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_chat_sources,)
    _SELECT = (
        "SELECT num, digest, complete FROM chat_sources "
        "WHERE scope = ? AND format = ? AND source_id = ?"
    )
    _SELECT_BY_CHAT = (
        "SELECT format, source_id FROM chat_sources WHERE scope = ? AND num = ? LIMIT 1"
    )
    _UPSERT = (
        "INSERT INTO chat_sources (scope, format, source_id, num, digest, complete, imported_at) "
        "VALUES (?, ?, ?, ?, ?, false, ?) ON CONFLICT (scope, format, source_id) DO UPDATE SET "
        "num = excluded.num, digest = excluded.digest, complete = false, "
        "imported_at = excluded.imported_at"
    )
    _COMPLETE = (
        "UPDATE chat_sources SET complete = true WHERE scope = ? AND format = ? AND source_id = ?"
    )

    def __init__(self, db: PostgresScope) -> None:
        super().__init__(db)
        self._key = (db.name,)
