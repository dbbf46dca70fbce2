"""Other packages' rows in a conversation's PostgreSQL scope, deleted with the conversation.

On PostgreSQL the runtime keeps its records of a chat in the chat's own scope (so a turn's
message and run record commit together). ``Sessions.drop_conversation_rows`` (a chat's purge)
must delete them too, in its commit, without this package naming another's tables: the owner
registers a function here, and :func:`backend.sessions.pg_schema.drop_rows` runs each. This
module imports nothing, so registering never loads psycopg.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ScopeRowsDropper = Callable[[Any], None]
"""Deletes its package's rows of the conversation scope it is given (a ``PostgresScope``)."""
_DROPPERS: list[ScopeRowsDropper] = []


def drop_with_conversations(dropper: ScopeRowsDropper) -> None:
    """Have every purge of a conversation on PostgreSQL also run ``dropper`` in its commit."""
    if dropper not in _DROPPERS:
        _DROPPERS.append(dropper)


def other_rows_droppers() -> tuple[ScopeRowsDropper, ...]:
    return tuple(_DROPPERS)
