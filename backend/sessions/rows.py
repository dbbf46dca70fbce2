"""RowReader: point reads of stored message rows, reassembled from their slices.

Reads ``session_messages`` and ``session_message_chunks`` by key (a row, a list of ids, or a
whole session); walks along parent pointers are :mod:`backend.sessions.paths`.

Invariants:

* A row's content is its first slice plus continuation slices ``1..content_chunks`` in
  ``idx`` order; a reader never returns a partial content (a row with ``content_chunks = 0``
  has no continuation rows to fetch, so the common small row costs one read).
* Stored JSON that no longer parses reads as ``None`` (reads degrade, writes raise); media
  pointers are resolved to their payloads only when a message is decoded for a caller.
* Id lists travel as one JSON array bound to ``json_each(?)``: no statement is assembled from
  data, whatever the number of ids.

Callers hold ``database.lock`` (or a snapshot) so that rows and slices describe one commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from backend.sessions.attachment_store import AttachmentStore
from backend.sessions.attachments import find_pointers, resolve_attachments
from backend.sessions.encoding import decode_content, json_list
from backend.storage import Scope


@dataclass(frozen=True, slots=True)
class StoredRow:
    """What an update needs to know about the row it replaces."""

    digest: bytes | None
    chunks: int
    token_estimate: int
    parent_id: str | None


class RowReader:
    """Point reads of one conversation file's message rows."""

    def __init__(self, database: Scope, attachments: AttachmentStore) -> None:
        self.db = database
        self._attachments = attachments

    id_list: Callable[[Iterable[str]], object] = staticmethod(json_list)
    """How a list of ids is bound (the PostgreSQL twin binds an array)."""

    _SELECT_EXISTS = "SELECT 1 FROM session_messages WHERE session_id = ? AND id = ?"

    def exists(self, session_id: str, message_id: str) -> bool:
        return self.db.query_one(self._SELECT_EXISTS, (session_id, message_id)) is not None

    _SELECT_STORED = (
        "SELECT content_hash, content_chunks, token_estimate, parent_id"
        " FROM session_messages WHERE session_id = ? AND id = ?"
    )

    def stored_row(self, session_id: str, message_id: str) -> StoredRow | None:
        row = self.db.query_one(self._SELECT_STORED, (session_id, message_id))
        if row is None:
            return None
        return StoredRow(
            row["content_hash"], row["content_chunks"], row["token_estimate"], row["parent_id"]
        )

    _SELECT_ROW = (
        "SELECT id, parent_id, content, content_chunks FROM session_messages"
        " WHERE session_id = ? AND id = ?"
    )

    def load_message(self, session_id: str, message_id: str) -> dict | None:
        """One message, reassembled and with its attachments inlined; None if absent."""
        found = self.load_row(session_id, message_id)
        return None if found is None else found[0]

    def load_row(self, session_id: str, message_id: str) -> tuple[dict | None, str | None] | None:
        """``(message, parent_id)`` of one row (message None if unreadable); None if absent."""
        row = self.db.query_one(self._SELECT_ROW, (session_id, message_id))
        if row is None:
            return None
        content = row["content"]
        if row["content_chunks"]:
            content += "".join(self.continuations(session_id, [message_id]).get(message_id, ()))
        return self.decode(content), row["parent_id"]

    _SELECT_CONTENTS = (
        "SELECT id, content, content_chunks FROM session_messages"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )

    _SELECT_ALL_CONTENTS = (
        "SELECT id, content, content_chunks FROM session_messages WHERE session_id = ?"
    )

    def load_contents(self, session_id: str, message_ids: Sequence[str] | None) -> dict[str, str]:
        """Full stored JSON of each id (continuations joined); absent ids are missing.

        ``None`` loads every row of the session.
        """
        if message_ids is None:
            rows = self.db.query(self._SELECT_ALL_CONTENTS, (session_id,))
        else:
            ids = self.id_list(message_ids)
            rows = self.db.query(self._SELECT_CONTENTS, (session_id, ids))
        chunked = [row["id"] for row in rows if row["content_chunks"]]
        continuations = self.continuations(session_id, chunked) if chunked else {}
        contents: dict[str, str] = {}
        for row in rows:
            content = row["content"]
            if row["content_chunks"]:
                content += "".join(continuations.get(row["id"], ()))
            contents[row["id"]] = content
        return contents

    _SELECT_CONTINUATIONS = (
        "SELECT id, content FROM session_message_chunks"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id, idx"
    )

    def continuations(self, session_id: str, message_ids: Sequence[str]) -> dict[str, list[str]]:
        """``{id: [slice 1, slice 2, ...]}`` of the chunked rows among ``message_ids``."""
        slices: dict[str, list[str]] = {}
        for row in self.db.query(
            self._SELECT_CONTINUATIONS, (session_id, self.id_list(message_ids))
        ):
            slices.setdefault(row["id"], []).append(row["content"])
        return slices

    _SELECT_FULL_CONTENT = "SELECT content FROM session_messages WHERE session_id = ? AND id = ?"

    def stored_content(self, session_id: str, message_id: str, chunks: int) -> str | None:
        """The full stored JSON of one row (continuations joined)."""
        row = self.db.query_one(self._SELECT_FULL_CONTENT, (session_id, message_id))
        if row is None:
            return None
        content = row["content"]
        if chunks:
            content += "".join(self.continuations(session_id, [message_id]).get(message_id, ()))
        return content

    def decode(self, content: str) -> dict | None:
        """A stored JSON text as the caller wrote it (attachments inlined); None if unreadable."""
        message = decode_content(content)
        if message is None:
            return None
        return resolve_attachments(message, find_pointers(content), self._attachments.load_payloads)
