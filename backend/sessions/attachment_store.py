"""AttachmentStore: the media payloads lifted out of messages, and who references them.

Owns ``session_attachment_meta``, ``session_attachment_chunks`` and
``session_attachment_refs``; :mod:`backend.sessions.attachments` decides (as pure code) what
becomes a payload and how a pointer reads back.

Invariants:

* **Content-addressed, one copy per file.** A payload is keyed by its sha256 and stored once
  whatever the number of messages (or sessions) naming it; storing it again costs one read.
* **No payload outlives its last reference.** Every write that drops references collects the
  payloads among them that nothing references any more, in the same transaction.
* A payload is split into slices of at most ``MAX_INLINE_ROW_BYTES``, like message content,
  so no row outgrows SQLite's page-friendly size.
* A pointer whose payload this file does not hold is asked of ``shared`` (when given): the
  owner's pool of payloads several files point to (a fork's, see
  ``backend.chats.attachment_pool``). Collection never touches those: they are not this
  file's.

Callers own the transaction; this class keeps no state besides its connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from backend.sessions.attachments import Loader, Payload, gather_payloads, payload_slices
from backend.sessions.encoding import EncodedMessage, json_list
from backend.storage import Scope


class AttachmentStore:
    """SQL of the attachment tables of one conversation file."""

    def __init__(self, database: Scope, shared: Loader | None = None) -> None:
        self.db = database
        self._shared = shared

    id_list: Callable[[Iterable[str]], object] = staticmethod(json_list)
    """How a list of ids or hashes is bound (the PostgreSQL twin binds an array)."""

    _SELECT_PAYLOAD_EXISTS = "SELECT 1 FROM session_attachment_meta WHERE hash = ?"
    _INSERT_PAYLOAD_META = (
        "INSERT OR IGNORE INTO session_attachment_meta (hash, bytes, media_type, chunks)"
        " VALUES (?, ?, ?, ?)"
    )
    _INSERT_PAYLOAD_CHUNK = (
        "INSERT OR IGNORE INTO session_attachment_chunks (hash, idx, data) VALUES (?, ?, ?)"
    )

    def put_payloads(self, payloads: Iterable[Payload]) -> None:
        """Store each payload once: an already-stored hash costs one read and no write."""
        for payload in payloads:
            if self.db.query_one(self._SELECT_PAYLOAD_EXISTS, (payload.hash,)) is not None:
                continue
            pieces = payload_slices(payload.data)
            self.db.execute(
                self._INSERT_PAYLOAD_META,
                (payload.hash, len(payload.data), payload.media_type, len(pieces)),
            )
            self.db.executemany(
                self._INSERT_PAYLOAD_CHUNK,
                ((payload.hash, index, piece) for index, piece in enumerate(pieces)),
            )

    _INSERT_REFERENCE = (
        "INSERT OR IGNORE INTO session_attachment_refs (session_id, message_id, hash)"
        " VALUES (?, ?, ?)"
    )

    def add_references(self, session_id: str, message_id: str, hashes: Iterable[str]) -> None:
        self.db.executemany(
            self._INSERT_REFERENCE, ((session_id, message_id, digest) for digest in sorted(hashes))
        )

    _SELECT_REFERENCES = (
        "SELECT hash FROM session_attachment_refs WHERE session_id = ? AND message_id = ?"
    )
    _DELETE_REFERENCE = (
        "DELETE FROM session_attachment_refs WHERE session_id = ? AND message_id = ? AND hash = ?"
    )

    def replace_references(self, session_id: str, encoded: EncodedMessage) -> None:
        """Make the row's references exactly ``encoded``'s (an update of its content)."""
        current = {
            row["hash"] for row in self.db.query(self._SELECT_REFERENCES, (session_id, encoded.id))
        }
        if encoded.payloads:
            self.put_payloads(encoded.payloads.values())
        added = encoded.references - current
        dropped = current - encoded.references
        if added:
            self.add_references(session_id, encoded.id, added)
        if dropped:
            self.db.executemany(
                self._DELETE_REFERENCE,
                ((session_id, encoded.id, digest) for digest in sorted(dropped)),
            )
            self._collect_garbage(sorted(dropped))

    _SELECT_REFERENCES_OF_ANY = (
        "SELECT DISTINCT hash FROM session_attachment_refs"
        " WHERE session_id = ? AND message_id IN (SELECT value FROM json_each(?))"
    )
    _DELETE_REFERENCES_OF_ANY = (
        "DELETE FROM session_attachment_refs"
        " WHERE session_id = ? AND message_id IN (SELECT value FROM json_each(?))"
    )

    def drop_references(self, session_id: str, message_ids: list[str]) -> None:
        """Forget what the (deleted) rows referenced, and the payloads left orphaned."""
        ids_json = self.id_list(message_ids)
        hashes = [
            row["hash"]
            for row in self.db.query(self._SELECT_REFERENCES_OF_ANY, (session_id, ids_json))
        ]
        if hashes:
            self.db.execute(self._DELETE_REFERENCES_OF_ANY, (session_id, ids_json))
            self._collect_garbage(hashes)

    _SELECT_SESSION_REFERENCES = (
        "SELECT DISTINCT hash FROM session_attachment_refs WHERE session_id = ?"
    )
    _CLEAR_REFERENCES = "DELETE FROM session_attachment_refs WHERE session_id = ?"

    def clear(self, session_id: str) -> None:
        """Forget every reference of a session, and the payloads left orphaned."""
        hashes = [
            row["hash"] for row in self.db.query(self._SELECT_SESSION_REFERENCES, (session_id,))
        ]
        if hashes:
            self.db.execute(self._CLEAR_REFERENCES, (session_id,))
            self._collect_garbage(hashes)

    # No index on refs.hash: collecting scans the references, which only deletes pay for.
    _DELETE_ORPHAN_CHUNKS = """
        DELETE FROM session_attachment_chunks
        WHERE hash IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (
            SELECT 1 FROM session_attachment_refs AS r
            WHERE r.hash = session_attachment_chunks.hash
          )
    """
    _DELETE_ORPHAN_META = """
        DELETE FROM session_attachment_meta
        WHERE hash IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (
            SELECT 1 FROM session_attachment_refs AS r WHERE r.hash = session_attachment_meta.hash
          )
    """

    def _collect_garbage(self, hashes: Sequence[str]) -> None:
        """Delete the payloads among ``hashes`` that no message references any more."""
        hashes_json = self.id_list(hashes)
        self.db.execute(self._DELETE_ORPHAN_CHUNKS, (hashes_json,))
        self.db.execute(self._DELETE_ORPHAN_META, (hashes_json,))

    _SELECT_PAYLOADS = """
        SELECT a.hash, a.media_type, c.data
        FROM session_attachment_meta AS a
        JOIN session_attachment_chunks AS c ON c.hash = a.hash
        WHERE a.hash IN (SELECT value FROM json_each(?))
        ORDER BY a.hash, c.idx
    """

    def load_payloads(self, hashes: set[str]) -> dict[str, tuple[bytes, str]]:
        """``{hash: (bytes, media_type)}`` for the stored payloads among ``hashes``."""
        rows = self.db.query(self._SELECT_PAYLOADS, (self.id_list(sorted(hashes)),))
        found = gather_payloads(rows)
        if self._shared is not None and len(found) < len(hashes):
            found.update(self._shared(hashes - found.keys()))
        return found
