"""MessageIndexStore: the directory's cross-chat message index, as tables and their SQL.

Tables (component ``chats.index``, in ``directory.sqlite``)::

    message_fts   fts5(content, chat_num UNINDEXED, message_id UNINDEXED)   rowid = doc
    message_docs  (chat_num, message_id, doc, digest)  WITHOUT ROWID   what is indexed, per chat
    index_leases  (chat_num, holder, acquired_at) WITHOUT ROWID   who may be writing a chat

What goes in and when is decided by :mod:`backend.chats.index`; whose leases are stale, by
:mod:`backend.chats.lease_holders`.

Invariants:

* ``message_docs`` names exactly the documents of ``message_fts``: one per searchable message
  of a chat, with the digest of its text, so rewriting a chat with unchanged text writes
  nothing (a digest compare per message).
* **Document ids increase** (``max(rowid) + 1``, safe because every write holds the
  directory's write lock): FTS5 appends such rows to its segments cheaply, while
  hash-scattered rowids made each insert about seven times slower.
* A search sees live chats only (a join on ``chats.deleted_at``) and reads through its own
  connection when given one, so it never holds up the writers; ``snippet()`` runs only on the
  returned rows (:mod:`backend.chats.snippets` bounds its cost).
* Migrations are append-only; one that must re-derive the documents requests a rebuild by
  leasing every chat to :data:`~backend.chats.lease_holders.REBUILD_HOLDER`.

Callers own the transactions. The PostgreSQL twin (:mod:`backend.chats.pg_index_store`)
keeps these methods and rewrites the statements (class attributes) to take the directory's
scope first (``_key``), as :mod:`backend.agents.pg_store` does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backend.chats.lease_holders import REBUILD_HOLDER
from backend.chats.snippets import SNIPPET_ARGS, SNIPPET_WINDOW_CHARS, snippets
from backend.chats.values import ChatHit
from backend.sessions.search import FTS_TOKENIZER
from backend.storage import Database, Scope

COMPONENT = "chats.index"


def _m001_message_index(db: Database) -> None:
    db.execute(
        "CREATE VIRTUAL TABLE message_fts USING fts5("
        f"content, chat_num UNINDEXED, message_id UNINDEXED, tokenize = '{FTS_TOKENIZER}')"
    )
    db.execute(
        "CREATE TABLE message_docs (chat_num INTEGER NOT NULL, message_id TEXT NOT NULL, "
        "digest BLOB NOT NULL, PRIMARY KEY (chat_num, message_id)) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE index_leases (chat_num INTEGER NOT NULL, holder TEXT NOT NULL, "
        "acquired_at INTEGER NOT NULL, PRIMARY KEY (chat_num, holder)) WITHOUT ROWID"
    )


def _m002_sequential_documents(db: Database) -> None:
    """Key documents by increasing rowids (see ``MessageIndexStore``) and rebuild every chat.

    The rebuild is requested the way a crash requests it: a lease held by nobody.
    """
    db.execute("DROP TABLE message_fts")
    db.execute("DROP TABLE message_docs")
    db.execute(
        "CREATE VIRTUAL TABLE message_fts USING fts5("
        f"content, chat_num UNINDEXED, message_id UNINDEXED, tokenize = '{FTS_TOKENIZER}')"
    )
    db.execute(
        "CREATE TABLE message_docs (chat_num INTEGER NOT NULL, message_id TEXT NOT NULL, "
        "doc INTEGER NOT NULL, digest BLOB NOT NULL, PRIMARY KEY (chat_num, message_id)) "
        "WITHOUT ROWID"
    )
    db.execute(
        "INSERT OR IGNORE INTO index_leases (chat_num, holder, acquired_at) "
        "SELECT num, ?, 0 FROM chats WHERE purged_at IS NULL",
        (REBUILD_HOLDER,),
    )


def _m003_documents_by_number(db: Database) -> None:
    """Documents in the order they were written: what search by meaning walks to find the
    messages it has no vector for yet (``MessageVectorStore.missing``), stopping at the first
    few instead of reading every document."""
    db.execute("CREATE INDEX message_docs_by_doc ON message_docs (doc)")


MIGRATIONS = (_m001_message_index, _m002_sequential_documents, _m003_documents_by_number)


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass
class DocumentCounts:
    """What a write to the index did, in documents (summed over chats into ``IndexRepair``)."""

    added: int = 0
    updated: int = 0
    removed: int = 0

    def __iadd__(self, other: DocumentCounts) -> DocumentCounts:
        self.added += other.added
        self.updated += other.updated
        self.removed += other.removed
        return self


class MessageIndexStore:
    """SQL of ``message_fts`` / ``message_docs`` / ``index_leases``; callers own transactions."""

    migrations: tuple[Any, ...] = MIGRATIONS

    def __init__(self, db: Scope, search_db: Scope | None = None) -> None:
        self.db = db
        self.search_db = search_db or db
        """Searches read here: a connection of their own never holds up the writers."""
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    def _list_param(self, values: Sequence[Any]) -> Any:
        """A list as one parameter (``json_each(?)`` here)."""
        return json.dumps(list(values))

    _SELECT_DOCS = (
        "SELECT message_id, doc, digest FROM message_docs "
        "WHERE chat_num = ? AND message_id IN (SELECT value FROM json_each(?))"
    )
    _SELECT_ALL_DOCS = "SELECT message_id, doc, digest FROM message_docs WHERE chat_num = ?"
    _MAX_DOC = "SELECT coalesce(max(rowid), 0) FROM message_fts"
    _INSERT_FTS = (
        "INSERT INTO message_fts (rowid, content, chat_num, message_id) VALUES (?, ?, ?, ?)"
    )
    _DELETE_FTS = "DELETE FROM message_fts WHERE rowid = ?"
    _UPSERT_DOC = (
        "INSERT INTO message_docs (chat_num, message_id, doc, digest) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (chat_num, message_id) DO UPDATE SET doc = excluded.doc, "
        "digest = excluded.digest"
    )
    _DELETE_DOC = "DELETE FROM message_docs WHERE chat_num = ? AND message_id = ?"

    def apply(self, chat_num: int, changes: Mapping[str, str | None]) -> DocumentCounts:
        """Make the listed messages' documents equal ``changes`` (``None``: not searchable)."""
        if not changes:
            return DocumentCounts()
        ids = self._list_param(list(changes))
        rows = self.db.query(self._SELECT_DOCS, (*self._key, chat_num, ids))
        return self._write(chat_num, {row[0]: (row[1], bytes(row[2])) for row in rows}, changes)

    def replace_all(self, chat_num: int, truth: Mapping[str, str]) -> DocumentCounts:
        """Make the chat's documents exactly ``truth``."""
        rows = self.db.query(self._SELECT_ALL_DOCS, (*self._key, chat_num))
        existing = {row[0]: (row[1], bytes(row[2])) for row in rows}
        changes: dict[str, str | None] = dict.fromkeys(existing.keys() - truth.keys())
        changes.update(truth)
        return self._write(chat_num, existing, changes)

    def _write(
        self,
        chat_num: int,
        existing: Mapping[str, tuple[int, bytes]],
        changes: Mapping[str, str | None],
    ) -> DocumentCounts:
        counts = DocumentCounts()
        unindex: list[tuple[Any, ...]] = []
        index: list[tuple[str, str]] = []
        gone: list[tuple[Any, ...]] = []
        for message_id, text in changes.items():
            old = existing.get(message_id)
            if not text:
                if old is not None:
                    unindex.append((*self._key, old[0]))
                    gone.append((*self._key, chat_num, message_id))
                    counts.removed += 1
                continue
            if old is not None:
                if old[1] == text_digest(text):
                    continue
                unindex.append((*self._key, old[0]))
                counts.updated += 1
            else:
                counts.added += 1
            index.append((message_id, text))
        if unindex:
            self.db.executemany(self._DELETE_FTS, unindex)
        if gone:
            self.db.executemany(self._DELETE_DOC, gone)
        if index:
            max_doc = self.db.query_one(self._MAX_DOC, self._key)
            first = int(max_doc[0] if max_doc is not None else 0) + 1
            self._index_documents(
                [
                    (first + n, text, chat_num, message_id)
                    for n, (message_id, text) in enumerate(index)
                ]
            )
            self.db.executemany(
                self._UPSERT_DOC,
                (
                    (*self._key, chat_num, message_id, first + n, text_digest(text))
                    for n, (message_id, text) in enumerate(index)
                ),
            )
        return counts

    def _index_documents(self, documents: Sequence[tuple[int, str, int, str]]) -> None:
        """Write ``(doc, text, chat_num, message_id)`` documents into the searched table."""
        self.db.executemany(self._INSERT_FTS, documents)

    def drop_chat(self, chat_num: int) -> int:
        """Forget every document of a chat (purge, re-creation); return how many."""
        return self.replace_all(chat_num, {}).removed

    _COUNT_DOCS = "SELECT count(*) FROM message_docs WHERE chat_num = ?"

    def count(self, chat_num: int) -> int:
        row = self.db.query_one(self._COUNT_DOCS, (*self._key, chat_num))
        return int(row[0]) if row is not None else 0

    _INDEXED_CHATS = "SELECT DISTINCT chat_num FROM message_docs"

    def indexed_chats(self) -> list[int]:
        return [row[0] for row in self.db.query(self._INDEXED_CHATS, self._key)]

    # ── leases ──────────────────────────────────────────────────────

    _ACQUIRE = "INSERT OR IGNORE INTO index_leases (chat_num, holder, acquired_at) VALUES (?, ?, ?)"
    _RELEASE = "DELETE FROM index_leases WHERE chat_num = ? AND holder = ?"
    _RELEASE_ALL = "DELETE FROM index_leases WHERE chat_num = ?"
    _LEASES = "SELECT chat_num, holder FROM index_leases ORDER BY chat_num"

    def acquire(self, chat_num: int, holder: str, now_ms: int) -> None:
        self.db.execute(self._ACQUIRE, (*self._key, chat_num, holder, now_ms))

    def release(self, chat_num: int, holder: str) -> None:
        self.db.execute(self._RELEASE, (*self._key, chat_num, holder))

    def release_all(self, chat_num: int) -> None:
        self.db.execute(self._RELEASE_ALL, (*self._key, chat_num))

    def leases(self) -> list[tuple[int, str]]:
        return [(row[0], row[1]) for row in self.db.query(self._LEASES, self._key)]

    # ── search ──────────────────────────────────────────────────────

    _SEARCH = (
        "SELECT f.rowid, c.id, f.message_id, f.rank "
        "FROM message_fts f JOIN chats c ON c.num = f.chat_num "
        "WHERE message_fts MATCH ? AND c.deleted_at IS NULL "
        "AND (? IS NULL OR c.id IN (SELECT value FROM json_each(?))) "
        "ORDER BY f.rank, c.id, f.message_id LIMIT ?"
    )
    # snippet() costs the square of a document's hits: run it here only on documents that
    # fit one snippet window; longer ones are windowed in memory (backend.chats.snippets).
    _SNIPPETS = (
        "SELECT rowid, CASE WHEN length(content) <= ? THEN snippet(message_fts, 0, ?, ?, ?, ?) "
        "END FROM message_fts WHERE message_fts MATCH ? "
        "AND rowid IN (SELECT value FROM json_each(?))"
    )
    _CONTENT = "SELECT content FROM message_fts WHERE rowid = ?"

    def search(
        self, match: str, limit: int, chat_ids: Collection[str] | None = None
    ) -> list[ChatHit]:
        """Best bm25 first over live chats (those of ``chat_ids`` only, unless None);
        snippets computed for the returned rows only."""
        only = None if chat_ids is None else self._list_param(sorted(chat_ids))
        rows = self.search_db.query(self._SEARCH, (match, only, only, limit))
        if not rows:
            return []
        docs = json.dumps([row[0] for row in rows])
        found = {
            row[0]: row[1]
            for row in self.search_db.query(
                self._SNIPPETS, (SNIPPET_WINDOW_CHARS, *SNIPPET_ARGS, match, docs)
            )
        }
        long_docs = [doc for doc, snippet in found.items() if snippet is None]
        if long_docs:
            contents = [self.search_db.query_one(self._CONTENT, (doc,))[0] for doc in long_docs]
            found.update(zip(long_docs, snippets(contents, match), strict=True))
        return [
            ChatHit(chat_id=row[1], message_id=row[2], snippet=found.get(row[0]) or "", rank=row[3])
            for row in rows
        ]
