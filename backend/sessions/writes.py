"""MessageWriter: the SQL of every write to message rows and what hangs off them.

One logical write touches ``session_messages``, its continuation slices in
``session_message_chunks``, its attachment references (:mod:`.attachment_store`) and, once
the file was searched, its FTS document (:mod:`.search_index`). This class runs those
statements; the caches they invalidate (tail, token memo) are the store's business, so every
write goes through ``SessionStore``.

Invariants:

* Each method runs inside the caller's transaction: a write lands whole or not at all.
* A new row is ``INSERT OR IGNORE``: an id that already exists writes nothing and is reported,
  never overwritten (an append is idempotent; an update is a separate, explicit write).
* Deleting rows never orphans a child: each surviving child is re-pointed at its nearest
  surviving ancestor (or becomes a root), so every remaining path still reaches a root.
* SQL text is constant; values are always bound. Id lists travel as one JSON array bound to
  ``json_each(?)``, so no statement is assembled from data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from backend.sessions.attachment_store import AttachmentStore
from backend.sessions.compaction_store import CompactionStore
from backend.sessions.encoding import EncodedMessage, json_list
from backend.sessions.rows import StoredRow
from backend.sessions.search import indexed_text
from backend.sessions.search_index import SearchIndex
from backend.storage import Scope

# sqlite3 binds str, int, float and bytearray directly, but looks every other value (bytes
# included) up in its adapter registry first: a failed attribute lookup that builds and clears
# an AttributeError, about 4% of a small append. A bytearray copy of a 32-byte digest costs far
# less and is stored as the same BLOB.
_blob = bytearray


class MessageWriter:
    """Statements of the message writes of one conversation file."""

    def __init__(
        self,
        database: Scope,
        attachments: AttachmentStore,
        compactions: CompactionStore,
        index: SearchIndex,
    ) -> None:
        self.db = database
        self._attachments = attachments
        self._compactions = compactions
        self._index = index

    id_list: Callable[[Iterable[str]], object] = staticmethod(json_list)
    """How a list of ids is bound (the PostgreSQL twin binds an array)."""

    _INSERT_MESSAGE = (
        "INSERT OR IGNORE INTO session_messages (session_id, id, seq, parent_id, type, role,"
        " content, content_chunks, token_estimate, created_at, content_hash)"
        " VALUES (?, ?, ?, ?, 'message', ?, ?, ?, ?, ?, ?)"
    )

    def insert(
        self,
        session_id: str,
        encoded: EncodedMessage,
        seq: int,
        parent_id: str | None,
        created_at: int,
    ) -> bool:
        """Write a new row and what hangs off it; False (nothing written) if the id exists."""
        changed = self.db.write(
            self._INSERT_MESSAGE,
            (
                session_id,
                encoded.id,
                seq,
                parent_id,
                encoded.role,
                encoded.slices[0],
                encoded.continuation_count,
                encoded.token_estimate,
                created_at,
                _blob(encoded.digest),
            ),
        )
        if changed == 0:
            return False
        if encoded.continuation_count:
            self._write_continuations(session_id, encoded)
        if encoded.payloads:
            self._attachments.put_payloads(encoded.payloads.values())
        if encoded.references:
            self._attachments.add_references(session_id, encoded.id, encoded.references)
        if self._index.exists:
            self._index.index(session_id, encoded.id, encoded.role, indexed_text(encoded.message))
        return True

    _UPSERT_CONTINUATION = (
        "INSERT INTO session_message_chunks (session_id, id, idx, content) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (session_id, id, idx) DO UPDATE SET content = excluded.content"
    )

    def _write_continuations(self, session_id: str, encoded: EncodedMessage) -> None:
        self.db.executemany(
            self._UPSERT_CONTINUATION,
            (
                (session_id, encoded.id, index, piece)
                for index, piece in enumerate(encoded.slices[1:], start=1)
            ),
        )

    _STAMP_DIGEST = "UPDATE session_messages SET content_hash = ? WHERE session_id = ? AND id = ?"

    def stamp_digest(self, session_id: str, message_id: str, digest: bytes) -> None:
        self.db.write(self._STAMP_DIGEST, (_blob(digest), session_id, message_id))

    _UPDATE_MESSAGE = (
        "UPDATE session_messages SET role = ?, content = ?, content_chunks = ?,"
        " token_estimate = ?, content_hash = ? WHERE session_id = ? AND id = ?"
    )
    _DELETE_SURPLUS_CONTINUATIONS = (
        "DELETE FROM session_message_chunks WHERE session_id = ? AND id = ? AND idx > ?"
    )

    def replace(self, session_id: str, encoded: EncodedMessage, previous: StoredRow) -> None:
        """Overwrite a row's content in place (parent and seq unchanged)."""
        self.db.write(
            self._UPDATE_MESSAGE,
            (
                encoded.role,
                encoded.slices[0],
                encoded.continuation_count,
                encoded.token_estimate,
                _blob(encoded.digest),
                session_id,
                encoded.id,
            ),
        )
        if previous.chunks > encoded.continuation_count:
            self.db.execute(
                self._DELETE_SURPLUS_CONTINUATIONS,
                (session_id, encoded.id, encoded.continuation_count),
            )
        if encoded.continuation_count:
            self._write_continuations(session_id, encoded)
        self._attachments.replace_references(session_id, encoded)
        if self._index.exists:
            self._index.reindex(session_id, encoded.id, encoded.role, indexed_text(encoded.message))

    _SELECT_DELETE_TARGETS = (
        "SELECT id, parent_id, content_chunks FROM session_messages"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )
    _SELECT_CHILDREN_OF_ANY = (
        "SELECT id, parent_id FROM session_messages"
        " WHERE session_id = ? AND parent_id IN (SELECT value FROM json_each(?))"
    )
    _REPARENT = "UPDATE session_messages SET parent_id = ? WHERE session_id = ? AND id = ?"
    _DELETE_MESSAGES = (
        "DELETE FROM session_messages"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )
    _DELETE_CONTINUATIONS = (
        "DELETE FROM session_message_chunks"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )

    def delete(self, session_id: str, message_ids: Sequence[str]) -> bool:
        """Delete rows, splicing each surviving child to its nearest surviving ancestor.

        False when none of ``message_ids`` exists (nothing written).
        """
        targets = self.db.query(
            self._SELECT_DELETE_TARGETS, (session_id, self.id_list(message_ids))
        )
        if not targets:
            return False
        parents = {row["id"]: row["parent_id"] for row in targets}
        ids_json = self.id_list(parents)
        for child in self.db.query(self._SELECT_CHILDREN_OF_ANY, (session_id, ids_json)):
            if child["id"] in parents:
                continue
            self.db.execute(
                self._REPARENT,
                (_surviving_ancestor(child["parent_id"], parents), session_id, child["id"]),
            )
        self.db.execute(self._DELETE_MESSAGES, (session_id, ids_json))
        chunked = [row["id"] for row in targets if row["content_chunks"]]
        if chunked:
            self.db.execute(self._DELETE_CONTINUATIONS, (session_id, self.id_list(chunked)))
        self._attachments.drop_references(session_id, list(parents))
        if self._index.exists:
            self._index.unindex(session_id, parents)
        return True

    _CLEAR_MESSAGES = "DELETE FROM session_messages WHERE session_id = ?"
    _CLEAR_CONTINUATIONS = "DELETE FROM session_message_chunks WHERE session_id = ?"

    def clear(self, session_id: str) -> None:
        """Delete every row, continuation, compaction, reference (and orphaned payload)."""
        self.db.execute(self._CLEAR_MESSAGES, (session_id,))
        self.db.execute(self._CLEAR_CONTINUATIONS, (session_id,))
        self._compactions.clear(session_id)
        self._attachments.clear(session_id)
        if self._index.exists:
            self._index.clear(session_id)


def _surviving_ancestor(parent_id: str | None, deleted: dict[str, str | None]) -> str | None:
    """Follow parent pointers through the deleted rows to the first survivor (or root)."""
    seen: set[str] = set()
    while parent_id is not None and parent_id in deleted and parent_id not in seen:
        seen.add(parent_id)
        parent_id = deleted[parent_id]
    return None if parent_id in seen else parent_id
