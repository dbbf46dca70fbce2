"""Message search of a conversation on PostgreSQL: the twin of ``backend.sessions.search_index``.

What is indexed, when, and the lazy build (first search backfills every message of the
conversation in one transaction; from then on each write updates its documents) are
inherited; the tables differ (created by :mod:`backend.sessions.pg_schema`, every row keyed by
the conversation's scope first):

    session_search_scopes (scope)                                  the index was built
    session_search        (scope, doc) id, session_id, role, content   one row per message
    session_search_parts  (scope, doc, part) tsv                    its text as tsvector parts

``doc`` is the same ``fts_rowid`` the SQLite index keys by, and deleting a document deletes
its parts (``ON DELETE CASCADE``). The ``tsvector`` parts and the query come from
:mod:`backend.sessions.pg_fts` (FTS5's own tokens), so a search finds exactly what the FTS5
index finds; hits are ranked ``-max(ts_rank)`` over a message's parts, lower first like bm25,
ties in ``doc`` order (FTS5's rowid order). It reads the sessions store's
``session_messages`` and ``session_compactions`` (ids only) exactly as the SQLite index does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from typing_extensions import override

from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.pg_fts import RANK_EXPRESSION, document_parts, parts_query
from backend.sessions.records import SearchResult
from backend.sessions.search import fts_rowid
from backend.sessions.search_index import Document, SearchIndex
from backend.storage import Row

_RANK = RANK_EXPRESSION.format(document="p.tsv", query="k.q")
_BACKFILL_PAGE_ROWS = 500


class PgSearchIndex(SearchIndex):
    """SQL of the search tables of one conversation on PostgreSQL (a ``ScopeKeyed`` scope)."""

    _EXISTS = "SELECT 1 FROM session_search_scopes WHERE scope = ?"
    _CREATE_FTS = "INSERT INTO session_search_scopes (scope) VALUES (?) ON CONFLICT DO NOTHING"
    _SELECT_PAGE_FOR_INDEX = (
        "SELECT session_id, id, role, content, content_chunks FROM session_messages"
        " WHERE scope = ? AND (session_id, id) > (?, ?) ORDER BY session_id, id LIMIT ?"
    )
    _INSERT_DOC = (
        "INSERT INTO session_search (scope, doc, id, session_id, role, content)"
        " VALUES (?, ?, ?, ?, ?, ?)"
    )
    _INSERT_PART = (
        "INSERT INTO session_search_parts (scope, doc, part, tsv) VALUES (?, ?, ?, ?::tsvector)"
    )
    _UNINDEX = "DELETE FROM session_search WHERE scope = ? AND doc = ?"
    _SELECT_INDEXED = "SELECT role, content FROM session_search WHERE scope = ? AND doc = ?"
    _CLEAR_INDEX = "DELETE FROM session_search WHERE scope = ? AND session_id = ?"
    _SEARCH_PARTS = f"""
        SELECT d.id, d.role, d.content, -max({_RANK}) AS rank
        FROM (SELECT ?::text AS scope, ?::tsquery AS q, ?::text AS sid, ?::text AS prefix) AS k
        JOIN session_search AS d ON d.scope = k.scope AND d.session_id = k.sid
        JOIN session_search_parts AS p ON p.scope = d.scope AND p.doc = d.doc
        WHERE p.tsv @@ k.q
          AND d.id NOT IN (
            SELECT k.prefix || c.id FROM session_compactions AS c
            WHERE c.scope = k.scope AND c.session_id = k.sid
          )
          AND EXISTS (
            SELECT 1 FROM session_messages AS m
            WHERE m.scope = k.scope AND m.session_id = k.sid AND m.id = d.id
          )
        GROUP BY d.scope, d.doc {{having}}
        ORDER BY rank, d.doc
        LIMIT ?
    """

    @override
    def _stored_rows(self) -> Iterator[Row]:
        """Page by page (the scope fetches a statement's rows whole): a first search of a long
        conversation never holds all of its messages at once."""
        after = ("", "")
        while True:
            rows = self.db.query(self._SELECT_PAGE_FOR_INDEX, (*after, _BACKFILL_PAGE_ROWS))
            yield from rows
            if len(rows) < _BACKFILL_PAGE_ROWS:
                return
            after = (rows[-1]["session_id"], rows[-1]["id"])

    @override
    def _table_exists(self) -> bool:
        return self.db.query_one(self._EXISTS) is not None

    @override
    def _create(self) -> None:
        self.db.execute(self._CREATE_FTS)

    @override
    def _write_documents(self, documents: Sequence[Document]) -> None:
        self.db.executemany(self._INSERT_DOC, documents)
        parts = [
            (doc, number, part.tsvector)
            for doc, _id, _session_id, _role, text in documents
            for number, part in enumerate(document_parts(text))
        ]
        if parts:
            self.db.executemany(self._INSERT_PART, parts)

    @override
    def index(self, session_id: str, message_id: str, role: str, text: str) -> None:
        if text:
            self._write_documents(
                [(fts_rowid(session_id, message_id), message_id, session_id, role, text)]
            )

    @override
    def search(self, session_id: str, match: str, limit: int) -> list[SearchResult]:
        """``match`` is the FTS5 query the caller built, read back for a text's parts."""
        query = parts_query(match)
        if query is None:
            return []
        rows = self.db.query(
            self._SEARCH_PARTS.format(having=query.having("p.tsv")),
            (query.candidates, session_id, COMPACTION_PREFIX, *query.every, limit),
        )
        return [
            SearchResult(row["id"], row["role"], row["content"], float(row["rank"])) for row in rows
        ]
