"""MessageVectorStore: a vector per indexed message, beside the cross-chat message index.

Table (component ``chats.vectors``, in ``directory.sqlite``)::

    message_vectors (id PK, chat_num, message_id, digest, model, vector)
                    UNIQUE (chat_num, message_id)

* A vector belongs to one **document** of the message index (``message_docs``): the same
  ``(chat_num, message_id)`` and the same text ``digest``, made by ``model``. A row whose
  document changed, went away, or was made by another model is **stale**: never returned,
  and removed by :meth:`drop_stale`. So a vector is removed with its message, its chat and
  its purge without a line elsewhere: the index's own bookkeeping says what is current.
* :meth:`missing` lists the documents without a current vector, in document order from a
  given document on: what a restart catches up, whatever happened while no embedder ran.
  A caller that remembers the last document it embedded reads only what came after it;
  document numbers grow with every write, but the newest one's number can be handed out
  again after it is removed, so "nothing after it" is confirmed by one scan from the start.
* Vectors are int8 (a unit vector times 127, rounded): 384 bytes a message, cosine within
  about 1 % of float32's, which moves no result of the bench.
* ``id`` is never handed out twice (``AUTOINCREMENT`` here, an identity column in the
  PostgreSQL twin; a rewritten vector is a new row), so ``(count, max(id))`` moves with
  every write and tells a reader whether its copy is current.

SQL only; callers own transactions. The PostgreSQL twin
(:mod:`backend.chats.pg_vector_store`, picked by :func:`vector_store_for`) keeps these methods
and rewrites the statements (class attributes) to take the directory's scope first (``_key``),
as :mod:`backend.chats.pg_index_store` does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from backend.chats.directory_storage import twin_of
from backend.meaning.embedder import Vectors
from backend.storage import Database, Scope

COMPONENT = "chats.vectors"
QUANT = 127.0


def _m001_vectors(db: Database) -> None:
    db.execute(
        "CREATE TABLE message_vectors (id INTEGER PRIMARY KEY, chat_num INTEGER NOT NULL, "
        "message_id TEXT NOT NULL, digest BLOB NOT NULL, model TEXT NOT NULL, "
        "vector BLOB NOT NULL, UNIQUE (chat_num, message_id))"
    )


def _m002_ids_never_reused(db: Database) -> None:
    """``AUTOINCREMENT``: a dropped newest row's id is never handed out again, so
    ``(count, max(id))`` moves with every write (without it, dropping the newest vector and
    writing another gave the same pair and a cached table stayed stale)."""
    db.execute(
        "CREATE TABLE message_vectors_v2 (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "chat_num INTEGER NOT NULL, message_id TEXT NOT NULL, digest BLOB NOT NULL, "
        "model TEXT NOT NULL, vector BLOB NOT NULL, UNIQUE (chat_num, message_id))"
    )
    db.execute(
        "INSERT INTO message_vectors_v2 (id, chat_num, message_id, digest, model, vector) "
        "SELECT id, chat_num, message_id, digest, model, vector FROM message_vectors ORDER BY id"
    )
    db.execute("DROP TABLE message_vectors")
    db.execute("ALTER TABLE message_vectors_v2 RENAME TO message_vectors")


def pack(vector: Vectors) -> bytes:
    return np.clip(np.rint(vector * QUANT), -127, 127).astype(np.int8).tobytes()


@dataclass(frozen=True)
class MissingDocument:
    doc: int
    chat_num: int
    message_id: str
    digest: bytes
    text: str


@dataclass(frozen=True)
class VectorTable:
    """Every vector of a model: keys in row order and a float32 ``(n, dim)`` matrix (stored
    int8, widened once here: a query is then one BLAS product, 44 ms at 100,000 rows under
    load against 160 ms widening per query; 1.5 KB a message in memory)."""

    keys: list[tuple[int, str]]
    matrix: np.ndarray
    version: tuple[int, int]


def vector_store_for(db: Scope) -> MessageVectorStore:
    """The vector store of the directory database ``db``, on its engine (psycopg and the
    twin load on PostgreSQL only)."""
    return twin_of(MessageVectorStore, db)(db)


class MessageVectorStore:
    """SQL of ``message_vectors`` (see the module docstring)."""

    migrations: tuple[Any, ...] = (_m001_vectors, _m002_ids_never_reused)

    def __init__(self, db: Scope) -> None:
        self.db = db
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    # CROSS JOIN fixes the order SQLite must join in: documents first, in their order, each
    # text looked up by rowid. Left to choose, it scanned the full-text table and, for each
    # row, every document: a catch-up grew with the cube of the messages (1,000: 10 s).
    _MISSING = (
        "SELECT d.doc, d.chat_num, d.message_id, d.digest, f.content FROM message_docs d "
        "CROSS JOIN message_fts f ON f.rowid = d.doc "
        "WHERE d.doc > ? AND NOT EXISTS (SELECT 1 FROM message_vectors v "
        "WHERE v.chat_num = d.chat_num AND v.message_id = d.message_id "
        "AND v.digest = d.digest AND v.model = ?) "
        "ORDER BY d.doc LIMIT ?"
    )
    _COUNT_MISSING = (
        "SELECT count(*) FROM message_docs d WHERE NOT EXISTS (SELECT 1 FROM message_vectors v "
        "WHERE v.chat_num = d.chat_num AND v.message_id = d.message_id "
        "AND v.digest = d.digest AND v.model = ?)"
    )
    # A rewritten vector is a new row (REPLACE deletes the old one): a fresh id, never reused.
    _UPSERT = (
        "INSERT OR REPLACE INTO message_vectors (chat_num, message_id, digest, model, vector) "
        "VALUES (?, ?, ?, ?, ?)"
    )
    _DROP_STALE = (
        "DELETE FROM message_vectors WHERE model != ? OR NOT EXISTS (SELECT 1 FROM message_docs d "
        "WHERE d.chat_num = message_vectors.chat_num AND d.message_id = message_vectors.message_id "
        "AND d.digest = message_vectors.digest)"
    )
    _VERSION = "SELECT count(*), coalesce(max(id), 0) FROM message_vectors"
    _ALL = "SELECT chat_num, message_id, vector FROM message_vectors WHERE model = ? ORDER BY id"
    _CURRENT = (
        "SELECT v.chat_num, v.message_id, c.id, substr(f.content, 1, ?) FROM message_vectors v "
        "JOIN message_docs d ON d.chat_num = v.chat_num AND d.message_id = v.message_id "
        "AND d.digest = v.digest JOIN message_fts f ON f.rowid = d.doc "
        "JOIN chats c ON c.num = v.chat_num WHERE c.deleted_at IS NULL AND v.model = ? "
        "AND (v.chat_num, v.message_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?))"
    )

    def missing(self, model: str, limit: int, *, after: int = 0) -> list[MissingDocument]:
        """Up to ``limit`` documents past document ``after`` without a current vector."""
        rows = self.db.query(self._MISSING, (*self._key, after, model, limit))
        return [MissingDocument(row[0], row[1], row[2], bytes(row[3]), row[4]) for row in rows]

    def count_missing(self, model: str) -> int:
        row = self.db.query_one(self._COUNT_MISSING, (*self._key, model))
        return int(row[0]) if row is not None else 0

    def put(self, model: str, documents: Sequence[MissingDocument], vectors: Vectors) -> None:
        self.db.executemany(
            self._UPSERT,
            [
                (*self._key, doc.chat_num, doc.message_id, doc.digest, model, pack(vector))
                for doc, vector in zip(documents, vectors, strict=True)
            ],
        )

    def drop_stale(self, model: str) -> int:
        cursor = self.db.execute(self._DROP_STALE, (*self._key, model))
        return int(getattr(cursor, "rowcount", 0) or 0)

    def version(self) -> tuple[int, int]:
        row = self.db.query_one(self._VERSION, self._key)
        return (int(row[0]), int(row[1])) if row is not None else (0, 0)

    def table(self, model: str) -> VectorTable:
        version = self.version()
        rows = self.db.query(self._ALL, (*self._key, model))
        if not rows:
            return VectorTable([], np.zeros((0, 0), dtype=np.float32), version)
        matrix = np.frombuffer(b"".join(bytes(row[2]) for row in rows), dtype=np.int8)
        widened = matrix.reshape(len(rows), -1).astype(np.float32) / QUANT
        return VectorTable([(row[0], row[1]) for row in rows], widened, version)

    def current(
        self, model: str, keys: Sequence[tuple[int, str]], text_chars: int
    ) -> dict[tuple[int, str], tuple[str, str]]:
        """``{key: (chat id, start of its text)}`` for the ``keys`` that still name a live
        chat's message holding the text its vector was made from."""
        rows = self.db.query(self._CURRENT, (text_chars, model, json.dumps(list(keys))))
        return {(row[0], row[1]): (row[2], row[3]) for row in rows}
