"""The cross-chat message index on PostgreSQL: the twin of :mod:`backend.chats.index_store`.

One set of tables holds every person's index, each row and key led by ``scope`` (the name of
the person's directory scope), the first parameter of every statement::

    message_fts        (scope, doc, chat_num, message_id, content)   one row per document
    message_fts_parts  (scope, doc, part, chat_num, message_id, tsv)   its text as tsvector
                       parts (GIN-indexed), with the keys a search sorts and joins by
    message_docs       (scope, chat_num, message_id, doc, digest)    what is indexed, per chat
    index_leases       (scope, chat_num, holder, acquired_at)        who may be writing a chat

What is indexed and when is :mod:`backend.chats.index`'s, unchanged; so are the methods of
the SQLite store and their invariants. What differs, and why:

* **Search emulates FTS5** as :mod:`backend.sessions.pg_search_index` does: parts and queries
  are FTS5's own tokens (:mod:`backend.sessions.pg_fts`), so the same documents match; hits
  rank ``-max(ts_rank)`` over a document's parts (lower first, like bm25), ties in chat id
  then message id order (byte order, ``COLLATE "C"``), as the SQLite statement orders them.
  Snippets are computed in memory by :func:`backend.chats.snippets.snippets` (FTS5's own
  ``snippet()`` on the returned texts, the same markers and windows).
* **The GIN index finds a person's rows only.** Every part carries its scope's lexeme
  (:func:`scope_lexeme`, without a position, a character no FTS5 token holds) and a search
  asks for it beside the query, so the index intersects the query's rows with the scope's
  instead of returning every person's matches for the ``scope = ?`` filter to drop: a common
  word costs what this person's directory holds, whoever else shares the tables. Ranks use
  the query alone (the extra lexeme adds one to every part's length: orders are unchanged).
* **The GIN index has no pending list** (``fastupdate = off``): messages are indexed a few at
  a time, and rows waiting in a pending list are scanned linearly by every search until a
  vacuum merges them (a rare word took 36 ms instead of 0.5 ms over 10,000 messages).
* **Document ids increase per scope** (``max(doc) + 1`` over the scope's rows, read through
  the primary key): safe for the same reason as on SQLite, since every write holds the
  scope's write lock (the row lock of its ``_scopes`` row). The order is no longer a
  performance need (a GIN index does not care), but keeping the rule keeps one ``_write``.
* **Rebuilds.** The tables are created in their final shape, so there is no document to
  re-derive at creation. A later migration that must re-derive documents requests a rebuild
  the SQLite way, for every scope at once: a lease of every unpurged chat to
  :data:`~backend.chats.lease_holders.REBUILD_HOLDER` (``INSERT INTO index_leases SELECT
  scope, num, ... FROM chats``); each directory repairs its own chats when next opened.
* Searches join the directory's ``chats`` table (its PostgreSQL twin keys it by ``(scope,
  num)`` and keeps ``id`` and ``deleted_at``), so deleted chats are filtered as on SQLite.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import Any

from typing_extensions import override

from backend.chats.index_store import MessageIndexStore
from backend.chats.snippets import snippets
from backend.chats.values import ChatHit
from backend.sessions.pg_fts import RANK_EXPRESSION, document_parts, parts_query
from backend.storage import Scope
from backend.storage.postgres import PostgresScope


def _m001_message_index(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE message_fts (
            scope text COLLATE "C" NOT NULL,
            doc bigint NOT NULL,
            chat_num bigint NOT NULL,
            message_id text COLLATE "C" NOT NULL,
            content text NOT NULL,
            PRIMARY KEY (scope, doc)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE message_fts_parts (
            scope text COLLATE "C" NOT NULL,
            doc bigint NOT NULL,
            part integer NOT NULL,
            chat_num bigint NOT NULL,
            message_id text COLLATE "C" NOT NULL,
            tsv tsvector NOT NULL,
            PRIMARY KEY (scope, doc, part),
            FOREIGN KEY (scope, doc) REFERENCES message_fts ON DELETE CASCADE
        )
        """
    )
    db.execute(
        "CREATE INDEX message_fts_parts_tsv ON message_fts_parts USING gin (tsv) "
        "WITH (fastupdate = off)"
    )
    db.execute(
        """
        CREATE TABLE message_docs (
            scope text COLLATE "C" NOT NULL,
            chat_num bigint NOT NULL,
            message_id text COLLATE "C" NOT NULL,
            doc bigint NOT NULL,
            digest bytea NOT NULL,
            PRIMARY KEY (scope, chat_num, message_id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE index_leases (
            scope text COLLATE "C" NOT NULL,
            chat_num bigint NOT NULL,
            holder text COLLATE "C" NOT NULL,
            acquired_at bigint NOT NULL,
            PRIMARY KEY (scope, chat_num, holder)
        )
        """
    )


def _m002_documents_by_number(db: Scope) -> None:
    """A person's documents in the order they were written: search by meaning walks them to
    find the messages it has no vector for yet, and stops at the first few (without it each
    look read and sorted all of them: a catch-up of 5,000 messages took 239 s)."""
    db.execute("CREATE INDEX message_docs_by_doc ON message_docs (scope, doc)")


_RANK = RANK_EXPRESSION.format(document="p.tsv", query="k.q")
_SCOPE_MARK = "\x02"
"""Starts the scope's lexeme: a separator for FTS5, so no token, word or query holds it."""


def scope_lexeme(scope: str) -> str:
    """The lexeme every part of ``scope`` carries (without a position), so the GIN index
    finds a person's hits among their own rows only (see the module docstring)."""
    return _SCOPE_MARK + hashlib.blake2b(scope.encode("utf-8"), digest_size=8).hexdigest()


def scoped_tsvector(tsvector: str, scope: str) -> str:
    """A part's ``tsvector`` literal with its scope's lexeme."""
    return f"{tsvector} '{scope_lexeme(scope)}'"


def scoped_tsquery(tsquery: str, scope: str) -> str:
    """What a search of ``scope`` asks the GIN index: the query, among the scope's rows."""
    return f"( {tsquery} ) & '{scope_lexeme(scope)}'"


class PgMessageIndexStore(MessageIndexStore):
    """SQL of the cross-chat index on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_message_index, _m002_documents_by_number)
    _SELECT_DOCS = (
        "SELECT message_id, doc, digest FROM message_docs "
        "WHERE scope = ? AND chat_num = ? AND message_id = ANY(?)"
    )
    _SELECT_ALL_DOCS = (
        "SELECT message_id, doc, digest FROM message_docs WHERE scope = ? AND chat_num = ?"
    )
    _MAX_DOC = "SELECT coalesce(max(doc), 0) FROM message_fts WHERE scope = ?"
    _INSERT_FTS = (
        "INSERT INTO message_fts (scope, doc, content, chat_num, message_id) VALUES (?, ?, ?, ?, ?)"
    )
    _INSERT_PART = (
        "INSERT INTO message_fts_parts (scope, doc, part, chat_num, message_id, tsv) "
        "VALUES (?, ?, ?, ?, ?, ?::tsvector)"
    )
    _DELETE_FTS = "DELETE FROM message_fts WHERE scope = ? AND doc = ?"
    _UPSERT_DOC = (
        "INSERT INTO message_docs (scope, chat_num, message_id, doc, digest) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, chat_num, message_id) "
        "DO UPDATE SET doc = excluded.doc, digest = excluded.digest"
    )
    _DELETE_DOC = "DELETE FROM message_docs WHERE scope = ? AND chat_num = ? AND message_id = ?"
    _COUNT_DOCS = "SELECT count(*) FROM message_docs WHERE scope = ? AND chat_num = ?"
    _INDEXED_CHATS = "SELECT DISTINCT chat_num FROM message_docs WHERE scope = ?"
    _ACQUIRE = (
        "INSERT INTO index_leases (scope, chat_num, holder, acquired_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING"
    )
    _RELEASE = "DELETE FROM index_leases WHERE scope = ? AND chat_num = ? AND holder = ?"
    _RELEASE_ALL = "DELETE FROM index_leases WHERE scope = ? AND chat_num = ?"
    _LEASES = "SELECT chat_num, holder FROM index_leases WHERE scope = ? ORDER BY chat_num"
    # A document's rank is its best part's; the join and the sort see only matching
    # documents, never their text. The statement starts with SELECT, so the scope runs it as
    # a read (a WITH statement would be run as a write: the write lock, a version bump).
    _SEARCH_PG = f"""
        SELECT h.doc, c.id, h.message_id, h.rank
        FROM (SELECT ?::text AS scope, ?::tsquery AS q, ?::tsquery AS scoped) AS k
        CROSS JOIN LATERAL (
            SELECT p.doc, p.chat_num, p.message_id, -max({_RANK}) AS rank
            FROM message_fts_parts AS p
            WHERE p.scope = k.scope AND p.tsv @@ k.scoped
            GROUP BY p.doc, p.chat_num, p.message_id {{having}}
        ) AS h
        JOIN chats AS c ON c.scope = k.scope AND c.num = h.chat_num
        WHERE c.deleted_at IS NULL AND (?::text[] IS NULL OR c.id = ANY(?::text[]))
        ORDER BY h.rank, c.id COLLATE "C", h.message_id
        LIMIT ?
    """
    _CONTENTS = "SELECT doc, content FROM message_fts WHERE scope = ? AND doc = ANY(?)"

    def __init__(self, db: PostgresScope, search_db: Scope | None = None) -> None:
        super().__init__(db, search_db)
        self._key = (db.name,)

    @override
    def _list_param(self, values: Sequence[Any]) -> Any:
        return list(values)

    @override
    def _index_documents(self, documents: Sequence[tuple[int, str, int, str]]) -> None:
        scope = self._key[0]
        self.db.executemany(
            self._INSERT_FTS,
            [
                (scope, doc, text, chat_num, message_id)
                for doc, text, chat_num, message_id in documents
            ],
        )
        parts = [
            (scope, doc, number, chat_num, message_id, scoped_tsvector(part.tsvector, scope))
            for doc, text, chat_num, message_id in documents
            for number, part in enumerate(document_parts(text))
        ]
        if parts:
            self.db.executemany(self._INSERT_PART, parts)

    @override
    def search(
        self, match: str, limit: int, chat_ids: Collection[str] | None = None
    ) -> list[ChatHit]:
        """``match`` is the FTS5 query the caller built, read back for a text's parts."""
        query = parts_query(match)
        if query is None:
            return []
        scope = self._key[0]
        scoped = scoped_tsquery(query.candidates, scope)
        only = None if chat_ids is None else sorted(chat_ids)
        rows = self.search_db.query(
            self._SEARCH_PG.format(having=query.having("p.tsv")),
            (scope, query.candidates, scoped, *query.every, only, only, limit),
        )
        if not rows:
            return []
        found = {
            row[0]: row[1]
            for row in self.search_db.query(self._CONTENTS, (scope, [row[0] for row in rows]))
        }
        docs = [row[0] for row in rows if row[0] in found]
        texts = dict(zip(docs, snippets([found[doc] for doc in docs], match), strict=True))
        return [
            ChatHit(
                chat_id=row[1],
                message_id=row[2],
                snippet=texts.get(row[0]) or "",
                rank=float(row[3]),
            )
            for row in rows
        ]
