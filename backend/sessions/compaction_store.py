"""CompactionStore: the stored compaction overlays of each session, cached per session.

Owns ``session_compactions``. Which span an overlay replaces is decided at read time by the
pure planner in :mod:`backend.sessions.overlays`; this module only stores and lists them.

Invariants:

* ``seq`` orders a session's overlays by insertion (the planner's "newest wins" needs it);
  it is assigned in the insert statement itself, so no cached counter can go stale.
* The per-session list is a cache of the file. It is dropped on every overlay write and by the
  store's coherence checks (a rollback, another connection's commit), never patched in place.
* An overlay's echo row (``COMPACTION_PREFIX + id``, written back by an old client) is hidden
  from every read: :meth:`CompactionStore.hidden_ids` is the one place that names them.

Callers own the transaction and hold ``database.lock`` for the cache.
"""

from __future__ import annotations

from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.records import StoredCompaction
from backend.storage import Scope


class CompactionStore:
    """SQL and cache of ``session_compactions`` for one conversation file."""

    def __init__(self, database: Scope) -> None:
        self.db = database
        self._cache: dict[str, list[StoredCompaction]] = {}

    def forget(self, session_id: str) -> None:
        self._cache.pop(session_id, None)

    def forget_all(self) -> None:
        self._cache.clear()

    _SELECT_COMPACTIONS = (
        "SELECT id, summary, from_message_id, to_message_id, created_at"
        " FROM session_compactions WHERE session_id = ? ORDER BY seq"
    )

    def load(self, session_id: str) -> list[StoredCompaction]:
        """The session's overlays in insertion order (cached)."""
        cached = self._cache.get(session_id)
        if cached is None:
            cached = [
                StoredCompaction(
                    row["id"],
                    row["summary"],
                    row["from_message_id"],
                    row["to_message_id"],
                    row["created_at"],
                )
                for row in self.db.query(self._SELECT_COMPACTIONS, (session_id,))
            ]
            self._cache[session_id] = cached
        return cached

    def hidden_ids(self, session_id: str) -> frozenset[str]:
        """Ids of stored rows that echo one of this session's overlays (#1984): never shown."""
        return frozenset(COMPACTION_PREFIX + c.id for c in self.load(session_id))

    _INSERT_COMPACTION = """
        INSERT INTO session_compactions
            (session_id, id, seq, summary, from_message_id, to_message_id, created_at)
        VALUES (?, ?, (
            SELECT coalesce(max(seq), 0) + 1 FROM session_compactions WHERE session_id = ?
        ), ?, ?, ?, ?)
    """

    def add(self, session_id: str, compaction: StoredCompaction) -> None:
        self.db.execute(
            self._INSERT_COMPACTION,
            (
                session_id,
                compaction.id,
                session_id,
                compaction.summary,
                compaction.from_message_id,
                compaction.to_message_id,
                compaction.created_at,
            ),
        )
        self._cache.pop(session_id, None)

    _CLEAR_COMPACTIONS = "DELETE FROM session_compactions WHERE session_id = ?"

    def clear(self, session_id: str) -> None:
        """Delete every overlay of the session (it is known to have none afterwards)."""
        self.db.execute(self._CLEAR_COMPACTIONS, (session_id,))
        self._cache[session_id] = []
