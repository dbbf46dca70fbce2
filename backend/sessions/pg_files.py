"""The file-level helpers of ``Sessions`` on PostgreSQL, where a path names a scope.

``Sessions.retire_file(path)`` and ``Sessions.drop_conversation_rows(path)`` act on a
conversation nobody has open here: they open the scope ``path`` names
(:mod:`backend.sessions.location`), act only if a conversation was ever opened on it
(:func:`~backend.sessions.pg_schema.holds_conversation`, as SQLite asks whether the file
exists), and close it again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from backend.sessions.location import open_conversation
from backend.sessions.pg_schema import (
    MIGRATIONS,
    drop_rows,
    holds_conversation,
    mark_retired,
    postgres_scope,
)
from backend.sessions.schema import MIGRATION_COMPONENT
from backend.storage.postgres import PostgresScope


def _on_existing(path: str | Path, action: Callable[[PostgresScope], None]) -> bool:
    """``action`` on the scope ``path`` names if it holds a conversation; False if not."""
    opened = open_conversation(path)
    try:
        scope = postgres_scope(opened.scope)
        scope.migrate(MIGRATION_COMPONENT, MIGRATIONS)
        if not holds_conversation(scope):
            return False
        action(scope)
        return True
    finally:
        opened.close()


def retire_scope(path: str | Path) -> bool:
    """``Sessions.retire_file`` on PostgreSQL: mark the conversation ``path`` names retired;
    False if there is none."""
    return _on_existing(path, mark_retired)


def drop_scope(path: str | Path) -> bool:
    """``Sessions.drop_conversation_rows``: delete the rows of the conversation ``path``
    names, leaving it retired (``pg_schema.drop_rows``); False if there is none."""
    return _on_existing(path, drop_rows)
