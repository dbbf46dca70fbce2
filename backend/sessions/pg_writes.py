"""Message writes on PostgreSQL: the twin of :mod:`backend.sessions.writes`.

The same statements, each leading with the conversation's scope (an ``UPDATE`` takes it
through the ``k`` CTE, so it still comes first); ``INSERT OR IGNORE`` is ``ON CONFLICT DO
NOTHING``, id lists are one bound ``text[]``.

**An append is one round trip** (:meth:`PgMessageWriter.insert_at_once`): the message row, its
continuation slices and its search document go in one statement behind the scope's guarded bump
(``GUARDED_BUMP``), a transaction of its own (no ``BEGIN`` or ``COMMIT`` sent); it writes only if
nobody else committed to the conversation since the store last looked, which is what the store's
``begin_write`` would otherwise have read first (a round trip of its own).

**A growing message rewrites only its end** (:mod:`backend.sessions.growth`): a streamed
reply is updated at every checkpoint, and rewriting it whole each time makes the WAL grow
with the square of the reply. An update whose stored slices still begin the new content keeps
them, and writes the rest as new continuation slices; the message row's own update then leaves
its content (slice 0) alone, so PostgreSQL keeps the stored value instead of writing it again.

**A long import into a new database analyses the tables it fills**
(:mod:`backend.storage.postgres.statistics`): without statistics, every key lookup of the
import would filter the whole conversation.
"""

from __future__ import annotations

from typing_extensions import override

from backend.sessions.encoding import EncodedMessage
from backend.sessions.growth import GROWTH_MIN_CHARS, grown_slices
from backend.sessions.pg_fts import document_parts
from backend.sessions.pg_rows import ID_LIST, id_array
from backend.sessions.pg_scoped import SCOPE_CTE, ScopeKeyed
from backend.sessions.rows import StoredRow
from backend.sessions.search import fts_rowid, indexed_text
from backend.sessions.writes import MessageWriter, _blob
from backend.storage.postgres import GUARDED_BUMP
from backend.storage.postgres.statistics import FreshTableStatistics


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
    _UPDATE_MESSAGE_HEAD = (
        SCOPE_CTE + "UPDATE session_messages AS m SET role = ?, content_chunks = ?,"
        " token_estimate = ?, content_hash = ? FROM k"
        " WHERE m.scope = k.scope AND m.session_id = ? AND m.id = ?"
    )
    _SELECT_SLICES = """
        SELECT s.idx, s.content
        FROM (SELECT ?::text AS scope, ?::text AS sid, ?::text AS id) AS k,
        LATERAL (
            SELECT 0 AS idx, m.content FROM session_messages AS m
            WHERE m.scope = k.scope AND m.session_id = k.sid AND m.id = k.id
            UNION ALL
            SELECT c.idx, c.content FROM session_message_chunks AS c
            WHERE c.scope = k.scope AND c.session_id = k.sid AND c.id = k.id
        ) AS s
        ORDER BY s.idx
    """
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

    _INSERT_AT_ONCE = (
        GUARDED_BUMP + ", k AS (SELECT ?::text AS scope, ?::text AS sid, ?::text AS id),"
        " m AS (INSERT INTO session_messages (scope, session_id, id, seq, parent_id, type,"
        " role, content, content_chunks, token_estimate, created_at, content_hash)"
        " SELECT k.scope, k.sid, k.id, ?::bigint, ?::text, 'message', ?::text, ?::text,"
        " ?::integer, ?::bigint, ?::bigint, ?::bytea FROM bump, k"
        " ON CONFLICT DO NOTHING RETURNING 1),"
        " c AS (INSERT INTO session_message_chunks (scope, session_id, id, idx, content)"
        " SELECT k.scope, k.sid, k.id, u.idx, u.content FROM m, k,"
        " unnest(?::text[]) WITH ORDINALITY AS u(content, idx)"
        " ON CONFLICT (scope, session_id, id, idx) DO UPDATE SET content = excluded.content"
        " RETURNING 1),"
        " d AS (INSERT INTO session_search (scope, doc, id, session_id, role, content)"
        " SELECT k.scope, ?::bigint, k.id, k.sid, ?::text, ?::text FROM m, k WHERE ?::boolean"
        " RETURNING doc),"
        " p AS (INSERT INTO session_search_parts (scope, doc, part, tsv)"
        " SELECT k.scope, d.doc, u.part - 1, u.tsv::tsvector FROM d, k,"
        " unnest(?::text[]) WITH ORDINALITY AS u(tsv, part) RETURNING 1)"
        " SELECT bump.*, (SELECT count(*) FROM m) AS inserted, (SELECT count(*) FROM m)"
        " + (SELECT count(*) FROM c) + (SELECT count(*) FROM d) + (SELECT count(*) FROM p)"
        " AS written FROM bump"
    )

    _statistics: FreshTableStatistics | None = None

    @override
    def insert(
        self,
        session_id: str,
        encoded: EncodedMessage,
        seq: int,
        parent_id: str | None,
        created_at: int,
    ) -> bool:
        inserted = super().insert(session_id, encoded, seq, parent_id, created_at)
        if inserted:
            if self._statistics is None:
                self._statistics = FreshTableStatistics(("session_messages", "session_search"))
            db = self.db
            assert isinstance(db, ScopeKeyed)
            self._statistics.wrote(db.scope)
        return inserted

    def insert_at_once(
        self,
        session_id: str,
        encoded: EncodedMessage,
        seq: int,
        parent_id: str | None,
        created_at: int,
        data_version: int,
    ) -> bool | None:
        """``insert`` as a whole transaction in one round trip, if the conversation's
        ``data_version`` is still ``data_version`` (see the module docstring): True (stored),
        False (the id exists: nothing written) or None (someone else committed meanwhile:
        nothing written, catch up and ``insert``). Not for a message with attachments."""
        assert not encoded.payloads and not encoded.references
        text = indexed_text(encoded.message) if self._index.exists else ""
        db = self.db
        assert isinstance(db, ScopeKeyed)
        row = db.commit_if_unmoved(
            self._INSERT_AT_ONCE,
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
                list(encoded.slices[1:]),
                fts_rowid(session_id, encoded.id),
                encoded.role,
                text,
                bool(text),
                [part.tsvector for part in document_parts(text)] if text else [],
            ),
            data_version,
        )
        return None if row is None else bool(row["inserted"])

    @override
    def _replace_content(
        self, session_id: str, encoded: EncodedMessage, previous: StoredRow
    ) -> None:
        """Keep the stored slices that still begin the new content; write only the rest."""
        grown = None
        if len(encoded.content) >= GROWTH_MIN_CHARS:  # smaller: rewritten whole, as on SQLite
            rows = self.db.query(self._SELECT_SLICES, (session_id, encoded.id))
            stored = [row["content"] for row in rows]
            grown = grown_slices(stored, encoded.content)
        if grown is None:
            super()._replace_content(session_id, encoded, previous)
            return
        first, pieces = grown
        chunks = first - 1 + len(pieces)
        head = (encoded.role, chunks, encoded.token_estimate, _blob(encoded.digest))
        if first == 0:  # the row's own slice changed: written with it
            self.db.write(
                self._UPDATE_MESSAGE, (encoded.role, pieces[0], *head[1:], session_id, encoded.id)
            )
            first, pieces = 1, pieces[1:]
        else:  # the row keeps its slice: PostgreSQL keeps the stored value, unwritten
            self.db.write(self._UPDATE_MESSAGE_HEAD, (*head, session_id, encoded.id))
        if len(stored) - 1 > chunks:
            self.db.execute(self._DELETE_SURPLUS_CONTINUATIONS, (session_id, encoded.id, chunks))
        if pieces:
            self.db.executemany(
                self._UPSERT_CONTINUATION,
                ((session_id, encoded.id, first + n, piece) for n, piece in enumerate(pieces)),
            )
