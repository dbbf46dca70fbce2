"""PathReader: walks of the message tree along parent pointers, without loading content.

A conversation is a tree of rows in ``session_messages``; a branch is the path from a root down
to a leaf. These statements follow ``parent_id`` upwards with a recursive CTE and return ids
and sizes only; :mod:`backend.sessions.rows` loads content afterwards, in windows.

Invariants:

* **Bounded.** A walk stops :data:`MAX_PATH_DEPTH` parents above its leaf, so one read touches
  at most ``MAX_PATH_DEPTH + 1`` rows however long the thread (a capped path says so).
* **Content-free recursion.** The CTE carries ids only (issue #1710: a CTE dragging content
  through every level ran SQLite out of memory); sizes are measured once per row at the end.
* A row's ``bytes`` is its stored JSON plus continuation slices plus, for each referenced
  payload, its base64 length: what a read of that row hands back.

Callers hold ``database.lock`` (or a snapshot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from backend.sessions.compaction_store import CompactionStore
from backend.storage import Row, Scope

MAX_PATH_DEPTH = 10_000
"""A path walk stops ``MAX_PATH_DEPTH`` parents above the leaf: at most 10,001 rows per read."""


@dataclass(frozen=True, slots=True)
class PathRow:
    """One row of a path, measured without its content."""

    id: str
    parent_id: str | None
    role: str
    bytes: int
    token_estimate: int
    created_at: int
    chunks: int


@dataclass(frozen=True, slots=True)
class BranchPath:
    """A root-to-leaf path: visible rows (hidden overlay echoes removed), how many rows the walk
    took (hidden ones included) and whether it stopped at the cap with older rows left."""

    rows: list[PathRow] = field(default_factory=list)
    walked: int = 0
    capped: bool = False


# The rows from :leaf up to :cap parents above it, as ``path(id, parent_id, depth)``.
_WALK_UP = """
        WITH RECURSIVE path(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM session_messages WHERE session_id = :sid AND id = :leaf
            UNION ALL
            SELECT m.id, m.parent_id, path.depth + 1
            FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.parent_id
            WHERE path.depth < :cap
        )
"""


class PathReader:
    """Tree walks over one conversation file's message rows."""

    def __init__(self, database: Scope, compactions: CompactionStore) -> None:
        self.db = database
        self._compactions = compactions

    def _walk(self, sql: str, session_id: str, leaf_id: str, cap: int) -> Sequence[Row]:
        """Run one of the walks below (they name their parameters)."""
        return self.db.query(sql, {"sid": session_id, "leaf": leaf_id, "cap": cap})

    _SELECT_PATH = (
        _WALK_UP
        + """
        SELECT path.id, path.parent_id, m.role, m.content_chunks, m.token_estimate, m.created_at,
            length(CAST(m.content AS BLOB))
            + CASE WHEN m.content_chunks > 0 THEN (
                SELECT coalesce(sum(length(CAST(c.content AS BLOB))), 0)
                FROM session_message_chunks AS c WHERE c.session_id = :sid AND c.id = m.id
            ) ELSE 0 END
            + coalesce((
                SELECT sum((a.bytes + 2) / 3 * 4)
                FROM session_attachment_refs AS r
                JOIN session_attachment_meta AS a ON a.hash = r.hash
                WHERE r.session_id = :sid AND r.message_id = m.id
            ), 0) AS bytes
        FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.id
        ORDER BY path.depth DESC
    """
    )

    def path(self, session_id: str, leaf_id: str | None) -> BranchPath:
        """The root-to-leaf path ending at ``leaf_id`` with per-row sizes; empty if unknown."""
        if leaf_id is None:
            return BranchPath()
        rows = self._walk(self._SELECT_PATH, session_id, leaf_id, MAX_PATH_DEPTH)
        hidden = self._compactions.hidden_ids(session_id)
        visible = [
            PathRow(
                row["id"],
                row["parent_id"],
                row["role"],
                row["bytes"],
                row["token_estimate"],
                row["created_at"],
                row["content_chunks"],
            )
            for row in rows
            if row["id"] not in hidden
        ]
        capped = len(rows) > MAX_PATH_DEPTH and rows[0]["parent_id"] is not None
        return BranchPath(visible, len(rows), capped)

    _SELECT_PATH_IDS = (
        _WALK_UP
        + """
        SELECT id, parent_id, depth FROM path ORDER BY depth DESC
    """
    )

    def path_ids(self, session_id: str, leaf_id: str, cap: int = MAX_PATH_DEPTH) -> list[str]:
        """Ids (hidden ones included) from the root, or from ``cap`` rows up, down to the leaf."""
        rows = self._walk(self._SELECT_PATH_IDS, session_id, leaf_id, cap)
        return [row["id"] for row in rows]

    _SELECT_PATH_TOKENS = """
        WITH RECURSIVE path(id, parent_id, token_estimate, depth) AS (
            SELECT id, parent_id, token_estimate, 0
            FROM session_messages WHERE session_id = :sid AND id = :leaf
            UNION ALL
            SELECT m.id, m.parent_id, m.token_estimate, path.depth + 1
            FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.parent_id
            WHERE path.depth < :cap
        )
        SELECT id, token_estimate FROM path ORDER BY depth DESC
    """

    def path_tokens(self, session_id: str, leaf_id: str) -> list[tuple[str, int]]:
        """``(id, token_estimate)`` of every row (hidden ones included), root first."""
        rows = self._walk(self._SELECT_PATH_TOKENS, session_id, leaf_id, MAX_PATH_DEPTH)
        return [(row["id"], row["token_estimate"]) for row in rows]

    # ``IS`` rather than ``=``: a ``None`` parent lists the roots (an edited first message).
    _SELECT_CHILDREN = (
        "SELECT id, seq FROM session_messages WHERE session_id = ? AND parent_id IS ? ORDER BY seq"
    )

    def children(self, session_id: str, parent_id: str | None) -> list[tuple[str, int]]:
        """``(id, seq)`` of the children of ``parent_id`` (the roots for None), oldest first."""
        return [
            (row["id"], row["seq"])
            for row in self.db.query(self._SELECT_CHILDREN, (session_id, parent_id))
        ]

    _SELECT_TREE = (
        "SELECT id, parent_id, created_at FROM session_messages WHERE session_id = ? ORDER BY seq"
    )

    def tree_rows(self, session_id: str) -> list[tuple[str, str | None, int]]:
        """``(id, parent_id, created_at)`` of every row, in insertion (``seq``) order."""
        return [(r[0], r[1], r[2]) for r in self.db.query(self._SELECT_TREE, (session_id,))]
