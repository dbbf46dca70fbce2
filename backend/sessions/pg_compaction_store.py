"""Compaction overlays on PostgreSQL: the twin of :mod:`backend.sessions.compaction_store`.

The same statements, each leading with the conversation's scope; the insert numbers the
overlay in the statement itself, as on SQLite.
"""

from __future__ import annotations

from backend.sessions.compaction_store import CompactionStore
from backend.sessions.pg_scoped import SCOPE_CTE


class PgCompactionStore(CompactionStore):
    """SQL and cache of ``session_compactions`` for one conversation on PostgreSQL."""

    _SELECT_COMPACTIONS = (
        "SELECT id, summary, from_message_id, to_message_id, created_at"
        " FROM session_compactions WHERE scope = ? AND session_id = ? ORDER BY seq"
    )
    _INSERT_COMPACTION = (
        SCOPE_CTE
        + """
        INSERT INTO session_compactions
            (scope, session_id, id, seq, summary, from_message_id, to_message_id, created_at)
        SELECT k.scope, ?, ?, (
            SELECT coalesce(max(c.seq), 0) + 1 FROM session_compactions AS c
            WHERE c.scope = k.scope AND c.session_id = ?
        ), ?, ?, ?, ? FROM k
    """
    )
    _CLEAR_COMPACTIONS = "DELETE FROM session_compactions WHERE scope = ? AND session_id = ?"
