"""SearchableDocuments: a conversation file's searchable text, read for an index kept elsewhere.

The directory's cross-chat index (``backend.chats.index``) mirrors what ``Session.search``
finds in each chat file. It reads that text here, through the store that owns the tables,
never with SQL of its own: the rule of what is searchable (the row exists, is not a hidden
overlay echo, has non-empty text parts) and the schema stay in this package.

Each ``open`` is a short-lived connection of its own, so it sees exactly the committed state
of the file, never another thread's open transaction, and a missing file (a chat never
written) is reported as ``None`` instead of being created. On PostgreSQL the path names the
conversation's scope (:mod:`backend.sessions.location`), "missing" is a scope no conversation
was opened on, and nothing touches the disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from backend.sessions.location import configured_storage, open_conversation
from backend.sessions.schema import MIGRATION_COMPONENT, has_session_tables
from backend.sessions.store import SessionStore
from backend.storage import Database


class SearchableDocuments:
    """Read-only: the searchable text of the messages of one file."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    @classmethod
    @contextlib.contextmanager
    def open(cls, path: str | Path) -> Iterator[SearchableDocuments | None]:
        """The documents of the file at ``path``; ``None`` when it holds no conversation."""
        if configured_storage() != "sqlite":
            yield from _open_scope(cls, path)
            return
        if not Path(path).exists():
            yield None
            return
        database = Database(path)
        try:
            yield cls(SessionStore(database)) if has_session_tables(database) else None
        finally:
            database.close()

    def texts(
        self, session_id: str = "", message_ids: Iterable[str] | None = None
    ) -> dict[str, str]:
        """``{message_id: text}`` of searchable messages among ``message_ids`` (all if None).

        One read snapshot: rows, continuation slices and overlays describe the same commit.
        """
        ids = None if message_ids is None else sorted(set(message_ids))
        with self._store.db.snapshot():
            return self._store.index.searchable_texts(session_id, ids)


def _open_scope(
    cls: type[SearchableDocuments], path: str | Path
) -> Iterator[SearchableDocuments | None]:
    """``SearchableDocuments.open`` on PostgreSQL (loads psycopg only then)."""
    from backend.sessions import pg_schema
    from backend.sessions.pg_store import PgSessionStore

    opened = open_conversation(path)
    try:
        scope = pg_schema.postgres_scope(opened.scope)
        scope.migrate(MIGRATION_COMPONENT, pg_schema.MIGRATIONS)
        yield cls(PgSessionStore(scope)) if pg_schema.holds_conversation(scope) else None
    finally:
        opened.close()
