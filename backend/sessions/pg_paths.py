"""Tree walks on PostgreSQL: the twin of :mod:`backend.sessions.paths`.

The same bounded, content-free recursive walks, on the conversation's scope. The walk's
parameters are bound once, as a one-row CTE ``k`` (SQLite names them instead), and each walk
is read through ``SELECT * FROM (WITH RECURSIVE ...)`` so the scope runs it as the read it is.
A row's size is ``octet_length`` of its text, as SQLite's ``length(CAST(... AS BLOB))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from typing_extensions import override

from backend.sessions.paths import PathReader
from backend.storage import Row

_WALK_UP = """
        WITH RECURSIVE k AS (
            SELECT ?::text AS scope, ?::text AS sid, ?::text AS leaf, ?::bigint AS cap
        ),
        path(id, parent_id, depth) AS (
            SELECT m.id, m.parent_id, 0 FROM k JOIN session_messages AS m
                ON m.scope = k.scope AND m.session_id = k.sid AND m.id = k.leaf
            UNION ALL
            SELECT m.id, m.parent_id, path.depth + 1
            FROM path, k JOIN session_messages AS m ON m.scope = k.scope AND m.session_id = k.sid
            WHERE m.id = path.parent_id AND path.depth < k.cap
        )
"""


class PgPathReader(PathReader):
    """Tree walks over one conversation's message rows on PostgreSQL."""

    @override
    def _walk(self, sql: str, session_id: str, leaf_id: str, cap: int) -> Sequence[Row]:
        return self.db.query(sql, (session_id, leaf_id, cap))

    _SELECT_PATH = f"""
        SELECT * FROM ({_WALK_UP}
        SELECT path.id, path.parent_id, path.depth, m.role, m.content_chunks, m.token_estimate,
            m.created_at,
            octet_length(m.content)
            + CASE WHEN m.content_chunks > 0 THEN (
                SELECT coalesce(sum(octet_length(c.content)), 0)
                FROM session_message_chunks AS c
                WHERE c.scope = k.scope AND c.session_id = k.sid AND c.id = m.id
            ) ELSE 0 END
            + coalesce((
                SELECT sum((a.bytes + 2) / 3 * 4)
                FROM session_attachment_refs AS r
                JOIN session_attachment_meta AS a ON a.scope = r.scope AND a.hash = r.hash
                WHERE r.scope = k.scope AND r.session_id = k.sid AND r.message_id = m.id
            ), 0) AS bytes
        FROM path, k JOIN session_messages AS m ON m.scope = k.scope AND m.session_id = k.sid
        WHERE m.id = path.id
        ) AS walk ORDER BY walk.depth DESC
    """
    _SELECT_PATH_IDS = f"""
        SELECT * FROM ({_WALK_UP}
        SELECT id, parent_id, depth FROM path
        ) AS walk ORDER BY walk.depth DESC
    """
    _SELECT_PATH_TOKENS = """
        SELECT * FROM (
        WITH RECURSIVE k AS (
            SELECT ?::text AS scope, ?::text AS sid, ?::text AS leaf, ?::bigint AS cap
        ),
        path(id, parent_id, token_estimate, depth) AS (
            SELECT m.id, m.parent_id, m.token_estimate, 0 FROM k JOIN session_messages AS m
                ON m.scope = k.scope AND m.session_id = k.sid AND m.id = k.leaf
            UNION ALL
            SELECT m.id, m.parent_id, m.token_estimate, path.depth + 1
            FROM path, k JOIN session_messages AS m ON m.scope = k.scope AND m.session_id = k.sid
            WHERE m.id = path.parent_id AND path.depth < k.cap
        )
        SELECT id, token_estimate, depth FROM path
        ) AS walk ORDER BY walk.depth DESC
    """
    _SELECT_CHILDREN = (
        "SELECT id, seq FROM session_messages WHERE scope = ? AND session_id = ?"
        " AND parent_id IS NOT DISTINCT FROM ? ORDER BY seq"
    )
    _SELECT_TREE = (
        "SELECT id, parent_id, created_at FROM session_messages"
        " WHERE scope = ? AND session_id = ? ORDER BY seq"
    )
