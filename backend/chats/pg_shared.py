"""Shared memory on PostgreSQL: the twin of :mod:`backend.chats.shared`.

One set of tables holds every person's shared memory, each row and key led by ``scope`` (the
name of the person's directory scope), the first parameter of every statement::

    shared_context          (scope, label, content, updated_at)
    shared_entries          (scope, label, key, doc, updated_at)
    shared_entries_fts      (scope, doc, label, content)     one row per entry's document
    shared_entries_fts_parts (scope, doc, part, tsv)          its text as tsvector parts

The methods and invariants are the SQLite store's: ``append`` is still one statement (the
``ON CONFLICT ... RETURNING`` upsert; the row lock makes concurrent appends queue, none is
lost), ``set`` is last-writer-wins. Search emulates FTS5 as the message index does
(:mod:`backend.sessions.pg_fts`): any word of the query matches the same entries, ranked
``-max(ts_rank)`` over an entry's parts, ties newest entry first (``doc`` descending, as
``rowid DESC`` on SQLite). Document ids come from an identity column, so a newer entry always
has a greater one. The GIN index has no pending list and finds a person's rows only (each part
carries its scope's lexeme), for the reasons :mod:`backend.chats.pg_index_store` gives.
"""

from __future__ import annotations

from collections.abc import Sequence

from typing_extensions import override

from backend.chats.pg_index_store import scoped_tsquery, scoped_tsvector
from backend.chats.shared import SharedContextStore
from backend.sessions.pg_fts import RANK_EXPRESSION, document_parts, parts_query
from backend.storage import Scope
from backend.storage.postgres import PostgresScope


def _m001_shared(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE shared_context (
            scope text COLLATE "C" NOT NULL,
            label text COLLATE "C" NOT NULL,
            content text NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (scope, label)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE shared_entries (
            scope text COLLATE "C" NOT NULL,
            label text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            doc bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (scope, label, key)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE shared_entries_fts (
            scope text COLLATE "C" NOT NULL,
            doc bigint GENERATED ALWAYS AS IDENTITY,
            label text COLLATE "C" NOT NULL,
            content text NOT NULL,
            PRIMARY KEY (scope, doc)
        )
        """
    )
    create_parts_table(db, "shared_entries_fts_parts", "shared_entries_fts")


def create_parts_table(
    db: Scope, name: str, documents: str, *, columns: Sequence[str] = ()
) -> None:
    """Table ``name``: each row of ``documents`` (keyed ``scope, doc``) as ``tsvector`` parts,
    gone with it, GIN-indexed without a pending list; ``columns`` are extra ones, before
    ``tsv`` (a chunk's project, that a search filters on). Shared memory's and projects'."""
    extra = "".join(f"{column}, " for column in columns)
    db.execute(
        f"""
        CREATE TABLE {name} (
            scope text COLLATE "C" NOT NULL, doc bigint NOT NULL, part integer NOT NULL,
            {extra}tsv tsvector NOT NULL,
            PRIMARY KEY (scope, doc, part),
            FOREIGN KEY (scope, doc) REFERENCES {documents} ON DELETE CASCADE
        )
        """
    )
    db.execute(f"CREATE INDEX {name}_tsv ON {name} USING gin (tsv) WITH (fastupdate = off)")


# UPDATE takes the scope first through a one-row CTE, so every statement's first parameter is
# the scope whatever the order of the rest (as backend/agents/pg_store.py does).
SCOPED = "WITH k AS (SELECT ?::text AS scope) "
PARTS_RANK = RANK_EXPRESSION.format(document="p.tsv", query="k.q")
"""The rank of a parts row ``p`` for the query ``k.q`` (both stores' searches)."""


class PgSharedContextStore(SharedContextStore):
    """Shared memory's SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_shared,)
    _GET = "SELECT content FROM shared_context WHERE scope = ? AND label = ?"
    _LIST = 'SELECT label, content FROM shared_context WHERE scope = ? ORDER BY label COLLATE "C"'
    _SET = (
        "INSERT INTO shared_context (scope, label, content, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope, label) DO UPDATE SET content = excluded.content, "
        "updated_at = excluded.updated_at"
    )
    _APPEND = (
        "INSERT INTO shared_context AS s (scope, label, content, updated_at) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (scope, label) DO UPDATE SET "
        "content = s.content || excluded.content, updated_at = excluded.updated_at "
        "RETURNING s.content"
    )
    _FIND_ENTRY = "SELECT doc FROM shared_entries WHERE scope = ? AND label = ? AND key = ?"
    _INSERT_DOC = (
        "INSERT INTO shared_entries_fts (scope, label, content) VALUES (?, ?, ?) RETURNING doc"
    )
    _UPDATE_DOC = (
        SCOPED + "UPDATE shared_entries_fts AS f SET content = ? FROM k "
        "WHERE f.scope = k.scope AND f.doc = ?"
    )
    _DELETE_PARTS = "DELETE FROM shared_entries_fts_parts WHERE scope = ? AND doc = ?"
    _INSERT_PART = (
        "INSERT INTO shared_entries_fts_parts (scope, doc, part, tsv) VALUES (?, ?, ?, ?::tsvector)"
    )
    _INSERT_ENTRY = (
        "INSERT INTO shared_entries (scope, label, key, doc, updated_at) VALUES (?, ?, ?, ?, ?)"
    )
    _TOUCH_ENTRY = (
        SCOPED + "UPDATE shared_entries AS e SET updated_at = ? FROM k "
        "WHERE e.scope = k.scope AND e.label = ? AND e.key = ?"
    )
    # Starts with SELECT, so the scope runs it as a read (see pg_index_store's search).
    _SEARCH = f"""
        SELECT f.content
        FROM (SELECT ?::text AS scope, ?::tsquery AS q, ?::tsquery AS scoped) AS k
        CROSS JOIN LATERAL (
            SELECT p.doc, -max({PARTS_RANK}) AS rank
            FROM shared_entries_fts_parts AS p
            WHERE p.scope = k.scope AND p.tsv @@ k.scoped
            GROUP BY p.doc {{having}}
        ) AS h
        JOIN shared_entries_fts AS f ON f.scope = k.scope AND f.doc = h.doc
        WHERE f.label = ?
        ORDER BY h.rank, h.doc DESC
        LIMIT ?
    """

    def __init__(self, db: PostgresScope, search_db: Scope | None = None) -> None:
        super().__init__(db, search_db)
        self._key = (db.name,)

    @override
    def _insert_document(self, label: str, content: str) -> int:
        row = self.db.query_one(self._INSERT_DOC, (*self._key, label, content))
        assert row is not None
        doc = int(row[0])
        self._index_parts(doc, content)
        return doc

    @override
    def _update_document(self, doc: int, content: str) -> None:
        self.db.execute(self._UPDATE_DOC, (*self._key, content, doc))
        self.db.execute(self._DELETE_PARTS, (*self._key, doc))
        self._index_parts(doc, content)

    def _index_parts(self, doc: int, content: str) -> None:
        parts = [
            (*self._key, doc, number, scoped_tsvector(part.tsvector, self._key[0]))
            for number, part in enumerate(document_parts(content))
        ]
        if parts:
            self.db.executemany(self._INSERT_PART, parts)

    @override
    def _search(self, label: str, match: str, limit: int) -> Sequence[str]:
        query = parts_query(match)
        if query is None:
            return []
        scoped = scoped_tsquery(query.candidates, self._key[0])
        rows = self.search_db.query(
            self._SEARCH.format(having=query.having("p.tsv")),
            (*self._key, query.candidates, scoped, *query.every, label, limit),
        )
        return [row[0] for row in rows]
