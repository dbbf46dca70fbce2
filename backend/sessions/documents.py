"""SearchableDocuments: a conversation file's searchable text, read for an index kept elsewhere.

The directory's cross-chat index (``backend.chats.index``) mirrors what ``Session.search``
finds in each chat file. It reads that text here, through the store that owns the tables,
never with SQL of its own: the rule of what is searchable (the row exists, is not a hidden
overlay echo, has non-empty text parts) and the schema stay in this package.

Each ``open`` is a short-lived connection of its own, so it sees exactly the committed state
of the file, never another thread's open transaction, and a missing file (a chat never
written) is reported as ``None`` instead of being created.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from backend.sessions.schema import has_session_tables
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
