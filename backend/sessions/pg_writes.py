"""Message writes on PostgreSQL: the twin of :mod:`backend.sessions.writes`.

The same statements, each leading with the conversation's scope (an ``UPDATE`` takes it
through the ``k`` CTE, so it still comes first); ``INSERT OR IGNORE`` is ``ON CONFLICT DO
NOTHING``, id lists are one bound ``text[]``.
"""

from __future__ import annotations

from backend.sessions.pg_rows import ID_LIST, id_array
from backend.sessions.pg_scoped import SCOPE_CTE
from backend.sessions.writes import MessageWriter


class PgMessageWriter(MessageWriter):
    """Statements of the message writes of one conversation on PostgreSQL."""

    id_list = staticmethod(id_array)
    _INSERT_MESSAGE = (
        "INSERT INTO session_messages (scope, session_id, id, seq, parent_id, type, role,"
        " content, content_chunks, token_estimate, created_at, content_hash)"
        " VALUES (?, ?, ?, ?, ?, 'message', ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
    )
    _UPSERT_CONTINUATION = (
        "INSERT INTO session_message_chunks (scope, session_id, id, idx, content)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, session_id, id, idx)"
        " DO UPDATE SET content = excluded.content"
    )
    _STAMP_DIGEST = (
        SCOPE_CTE + "UPDATE session_messages AS m SET content_hash = ? FROM k"
        " WHERE m.scope = k.scope AND m.session_id = ? AND m.id = ?"
    )
    _UPDATE_MESSAGE = (
        SCOPE_CTE + "UPDATE session_messages AS m SET role = ?, content = ?, content_chunks = ?,"
        " token_estimate = ?, content_hash = ? FROM k"
        " WHERE m.scope = k.scope AND m.session_id = ? AND m.id = ?"
    )
    _DELETE_SURPLUS_CONTINUATIONS = (
        "DELETE FROM session_message_chunks"
        " WHERE scope = ? AND session_id = ? AND id = ? AND idx > ?"
    )
    _SELECT_DELETE_TARGETS = (
        "SELECT id, parent_id, content_chunks FROM session_messages"
        f" WHERE scope = ? AND session_id = ? AND id = {ID_LIST}"
    )
    _SELECT_CHILDREN_OF_ANY = (
        "SELECT id, parent_id FROM session_messages"
        f" WHERE scope = ? AND session_id = ? AND parent_id = {ID_LIST}"
    )
    _REPARENT = (
        SCOPE_CTE + "UPDATE session_messages AS m SET parent_id = ? FROM k"
        " WHERE m.scope = k.scope AND m.session_id = ? AND m.id = ?"
    )
    _DELETE_MESSAGES = (
        f"DELETE FROM session_messages WHERE scope = ? AND session_id = ? AND id = {ID_LIST}"
    )
    _DELETE_CONTINUATIONS = (
        f"DELETE FROM session_message_chunks WHERE scope = ? AND session_id = ? AND id = {ID_LIST}"
    )
    _CLEAR_MESSAGES = "DELETE FROM session_messages WHERE scope = ? AND session_id = ?"
    _CLEAR_CONTINUATIONS = "DELETE FROM session_message_chunks WHERE scope = ? AND session_id = ?"
