"""Point reads of message rows on PostgreSQL: the twin of :mod:`backend.sessions.rows`.

The statements of :class:`~backend.sessions.rows.RowReader`, each leading with the
conversation's scope (bound by :class:`~backend.sessions.pg_scoped.ScopeKeyed`); id lists are
one bound ``text[]`` (``= ANY(?)``) instead of a JSON array for ``json_each``.
"""

from __future__ import annotations

from collections.abc import Iterable

from backend.sessions.rows import RowReader

ID_LIST = "ANY(?::text[])"
"""A bound list of ids or hashes, as every twin of this package compares against one."""


def id_array(values: Iterable[str]) -> list[str]:
    """A list of ids or hashes as one bound parameter: a ``text[]`` for :data:`ID_LIST`."""
    return list(values)


class PgRowReader(RowReader):
    """Point reads of one conversation's message rows on a PostgreSQL scope."""

    id_list = staticmethod(id_array)
    _SELECT_EXISTS = "SELECT 1 FROM session_messages WHERE scope = ? AND session_id = ? AND id = ?"
    _SELECT_STORED = (
        "SELECT content_hash, content_chunks, token_estimate, parent_id"
        " FROM session_messages WHERE scope = ? AND session_id = ? AND id = ?"
    )
    _SELECT_ROW = (
        "SELECT id, parent_id, content, content_chunks FROM session_messages"
        " WHERE scope = ? AND session_id = ? AND id = ?"
    )
    _SELECT_CONTENTS = (
        "SELECT id, content, content_chunks FROM session_messages"
        f" WHERE scope = ? AND session_id = ? AND id = {ID_LIST}"
    )
    _SELECT_ALL_CONTENTS = (
        "SELECT id, content, content_chunks FROM session_messages"
        " WHERE scope = ? AND session_id = ?"
    )
    _SELECT_CONTINUATIONS = (
        "SELECT id, content FROM session_message_chunks"
        f" WHERE scope = ? AND session_id = ? AND id = {ID_LIST} ORDER BY id, idx"
    )
    _SELECT_FULL_CONTENT = (
        "SELECT content FROM session_messages WHERE scope = ? AND session_id = ? AND id = ?"
    )
