"""Message search of a conversation on PostgreSQL: the twin of ``backend.sessions.search_index``.

What is indexed, when, and the lazy build (first search backfills every message in one
transaction; from then on each write updates its documents) are inherited; the tables differ:

    session_search        (doc, id, session_id, role, content)   one row per searchable message
    session_search_parts  (doc, part, tsv)                        its text as tsvector parts

``doc`` is the same ``fts_rowid`` the SQLite index keys by, and deleting a document deletes
its parts (``ON DELETE CASCADE``). The ``tsvector`` parts and the query come from
:mod:`backend.sessions.pg_fts` (FTS5's own tokens), so a search finds exactly what the FTS5
index finds; hits are ranked ``-max(ts_rank)`` over a message's parts, lower first like bm25,
ties in ``doc`` order (FTS5's rowid order). It reads the sessions store's
``session_messages`` and ``session_compactions`` (ids only) exactly as the SQLite index does.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.pg_fts import RANK_EXPRESSION, document_parts, match_tsquery
from backend.sessions.records import SearchResult
from backend.sessions.search import fts_rowid
from backend.sessions.search_index import Document, SearchIndex

_RANK = RANK_EXPRESSION.format(document="p.tsv", query="?::tsquery")


class PgSearchIndex(SearchIndex):
    """SQL of ``session_search`` / ``session_search_parts`` on a PostgreSQL scope."""

    _EXISTS = "SELECT to_regclass('session_search') IS NOT NULL"
    _CREATE_FTS = (
        "CREATE TABLE session_search (doc bigint PRIMARY KEY, id text NOT NULL, "
        "session_id text NOT NULL, role text NOT NULL, content text NOT NULL)"
    )
    _CREATE_PARTS = (
        "CREATE TABLE session_search_parts (doc bigint NOT NULL "
        "REFERENCES session_search ON DELETE CASCADE, part integer NOT NULL, "
        "tsv tsvector NOT NULL, PRIMARY KEY (doc, part))"
    )
    _CREATE_BY_SESSION = "CREATE INDEX session_search_by_session ON session_search (session_id)"
    _CREATE_TSV_INDEX = (
        "CREATE INDEX session_search_parts_tsv ON session_search_parts USING gin (tsv)"
    )
    _INSERT_DOC = (
        "INSERT INTO session_search (doc, id, session_id, role, content) VALUES (?, ?, ?, ?, ?)"
    )
    _INSERT_PART = "INSERT INTO session_search_parts (doc, part, tsv) VALUES (?, ?, ?::tsvector)"
    _UNINDEX = "DELETE FROM session_search WHERE doc = ?"
    _SELECT_INDEXED = "SELECT role, content FROM session_search WHERE doc = ?"
    _CLEAR_INDEX = "DELETE FROM session_search WHERE session_id = ?"
    _SEARCH_PARTS = f"""
        SELECT d.id, d.role, d.content, -max({_RANK}) AS rank
        FROM session_search AS d JOIN session_search_parts AS p ON p.doc = d.doc
        WHERE p.tsv @@ ?::tsquery AND d.session_id = ?
          AND d.id NOT IN (
            SELECT ? || c.id FROM session_compactions AS c WHERE c.session_id = ?
          )
          AND EXISTS (
            SELECT 1 FROM session_messages AS m WHERE m.session_id = ? AND m.id = d.id
          )
        GROUP BY d.doc
        ORDER BY rank, d.doc
        LIMIT ?
    """

    def _table_exists(self) -> bool:
        row = self.db.query_one(self._EXISTS)
        return bool(row is not None and row[0])

    def _create(self) -> None:
        for statement in (
            self._CREATE_FTS,
            self._CREATE_PARTS,
            self._CREATE_BY_SESSION,
            self._CREATE_TSV_INDEX,
        ):
            self.db.execute(statement)

    def _write_documents(self, documents: Sequence[Document]) -> None:
        self.db.executemany(self._INSERT_DOC, documents)
        parts = [
            (doc, number, part.tsvector)
            for doc, _id, _session_id, _role, text in documents
            for number, part in enumerate(document_parts(text))
        ]
        if parts:
            self.db.executemany(self._INSERT_PART, parts)

    def index(self, session_id: str, message_id: str, role: str, text: str) -> None:
        if text:
            self._write_documents(
                [(fts_rowid(session_id, message_id), message_id, session_id, role, text)]
            )

    def search(self, session_id: str, match: str, limit: int) -> list[SearchResult]:
        """``match`` is the FTS5 phrase ``phrase_query`` built, read back as its tsquery."""
        query = match_tsquery(match)
        if query is None:
            return []
        rows = self.db.query(
            self._SEARCH_PARTS,
            (query, query, session_id, COMPACTION_PREFIX, session_id, session_id, limit),
        )
        return [
            SearchResult(row["id"], row["role"], row["content"], float(row["rank"])) for row in rows
        ]
