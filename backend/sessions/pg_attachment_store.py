"""Attachment payloads on PostgreSQL: the twin of :mod:`backend.sessions.attachment_store`.

The same statements, each leading with the conversation's scope: a payload is stored once per
conversation (as once per file), and collected when no message of that conversation
references it any more. Hash lists are one bound ``text[]``.
"""

from __future__ import annotations

from backend.sessions.attachment_store import AttachmentStore
from backend.sessions.pg_rows import ID_LIST, id_array


class PgAttachmentStore(AttachmentStore):
    """SQL of the attachment tables of one conversation on PostgreSQL."""

    id_list = staticmethod(id_array)
    _SELECT_PAYLOAD_EXISTS = "SELECT 1 FROM session_attachment_meta WHERE scope = ? AND hash = ?"
    _INSERT_PAYLOAD_META = (
        "INSERT INTO session_attachment_meta (scope, hash, bytes, media_type, chunks)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
    )
    _INSERT_PAYLOAD_CHUNK = (
        "INSERT INTO session_attachment_chunks (scope, hash, idx, data) VALUES (?, ?, ?, ?)"
        " ON CONFLICT DO NOTHING"
    )
    _INSERT_REFERENCE = (
        "INSERT INTO session_attachment_refs (scope, session_id, message_id, hash)"
        " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING"
    )
    _SELECT_REFERENCES = (
        "SELECT hash FROM session_attachment_refs"
        " WHERE scope = ? AND session_id = ? AND message_id = ?"
    )
    _DELETE_REFERENCE = (
        "DELETE FROM session_attachment_refs"
        " WHERE scope = ? AND session_id = ? AND message_id = ? AND hash = ?"
    )
    _SELECT_REFERENCES_OF_ANY = (
        "SELECT DISTINCT hash FROM session_attachment_refs"
        f" WHERE scope = ? AND session_id = ? AND message_id = {ID_LIST}"
    )
    _DELETE_REFERENCES_OF_ANY = (
        "DELETE FROM session_attachment_refs"
        f" WHERE scope = ? AND session_id = ? AND message_id = {ID_LIST}"
    )
    _SELECT_SESSION_REFERENCES = (
        "SELECT DISTINCT hash FROM session_attachment_refs WHERE scope = ? AND session_id = ?"
    )
    _CLEAR_REFERENCES = "DELETE FROM session_attachment_refs WHERE scope = ? AND session_id = ?"
    _DELETE_ORPHAN_CHUNKS = f"""
        DELETE FROM session_attachment_chunks AS c
        WHERE c.scope = ? AND c.hash = {ID_LIST}
          AND NOT EXISTS (
            SELECT 1 FROM session_attachment_refs AS r WHERE r.scope = c.scope AND r.hash = c.hash
          )
    """
    _DELETE_ORPHAN_META = f"""
        DELETE FROM session_attachment_meta AS a
        WHERE a.scope = ? AND a.hash = {ID_LIST}
          AND NOT EXISTS (
            SELECT 1 FROM session_attachment_refs AS r WHERE r.scope = a.scope AND r.hash = a.hash
          )
    """
    _SELECT_PAYLOADS = f"""
        SELECT a.hash, a.media_type, c.data
        FROM session_attachment_meta AS a
        JOIN session_attachment_chunks AS c ON c.scope = a.scope AND c.hash = a.hash
        WHERE a.scope = ? AND a.hash = {ID_LIST}
        ORDER BY a.hash, c.idx
    """
