"""The vectors of search by meaning on PostgreSQL: the twin of :mod:`backend.chats.vector_store`.

One table holds every person's vectors, each row and key led by ``scope`` (the name of the
person's directory scope), the first parameter of every statement::

    message_vectors (scope, chat_num, message_id, id, digest, model, vector)
                    PRIMARY KEY (scope, chat_num, message_id), INDEX (scope, id)

The methods and invariants are the SQLite store's, and so is what makes a vector current: the
same ``(chat_num, message_id)`` and text ``digest`` as its document in the message index's
``message_docs`` (:mod:`backend.chats.pg_index_store`, same scope), made by the same model.
Stale rows are never returned and :meth:`drop_stale` removes them, so a vector still goes with
its message, its chat and its purge without a line elsewhere. What differs, and why:

* **Vectors are ``bytea`` of int8**, the bytes SQLite keeps in its BLOB (384 bytes a
  message): no ``pgvector`` extension is needed (nor installed), and the nearest vectors are
  found in memory as on SQLite (:class:`~backend.chats.vector_store.VectorTable`), so both
  engines score the same bytes the same way and give the same hits.
* **``id`` is an identity column** (one sequence for every scope): an insert and a
  re-embedding (``SET id = DEFAULT``) both take a number above every one handed out before,
  so ``(count, max(id))`` of a scope moves on every change, even when the newest row was
  dropped and another written (SQLite's ``max(id) + 1`` would reuse its number). A scope's
  writes hold its write lock, so its numbers also grow in commit order.
* Lists of keys travel as two arrays (``unnest``) rather than SQLite's ``json_each``.
"""

from __future__ import annotations

from collections.abc import Sequence

from typing_extensions import override

from backend.chats.vector_store import MessageVectorStore
from backend.storage import Scope
from backend.storage.postgres import PostgresScope


def _m001_vectors(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE message_vectors (
            scope text COLLATE "C" NOT NULL,
            chat_num bigint NOT NULL,
            message_id text COLLATE "C" NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            digest bytea NOT NULL,
            model text COLLATE "C" NOT NULL,
            vector bytea NOT NULL,
            PRIMARY KEY (scope, chat_num, message_id)
        )
        """
    )
    db.execute("CREATE INDEX message_vectors_by_id ON message_vectors (scope, id)")


class PgMessageVectorStore(MessageVectorStore):
    """SQL of ``message_vectors`` on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_vectors,)
    _MISSING = (
        "SELECT d.doc, d.chat_num, d.message_id, d.digest, f.content FROM message_docs d "
        "JOIN message_fts f ON f.scope = d.scope AND f.doc = d.doc "
        "WHERE d.scope = ? AND d.doc > ? AND NOT EXISTS (SELECT 1 FROM message_vectors v "
        "WHERE v.scope = d.scope AND v.chat_num = d.chat_num AND v.message_id = d.message_id "
        "AND v.digest = d.digest AND v.model = ?) "
        "ORDER BY d.doc LIMIT ?"
    )
    _COUNT_MISSING = (
        "SELECT count(*) FROM message_docs d WHERE d.scope = ? AND NOT EXISTS "
        "(SELECT 1 FROM message_vectors v WHERE v.scope = d.scope AND v.chat_num = d.chat_num "
        "AND v.message_id = d.message_id AND v.digest = d.digest AND v.model = ?)"
    )
    _UPSERT = (
        "INSERT INTO message_vectors (scope, chat_num, message_id, digest, model, vector) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, chat_num, message_id) DO UPDATE SET "
        "id = DEFAULT, digest = excluded.digest, model = excluded.model, "
        "vector = excluded.vector"
    )
    _DROP_STALE = (
        "DELETE FROM message_vectors v WHERE v.scope = ? AND (v.model != ? OR NOT EXISTS "
        "(SELECT 1 FROM message_docs d WHERE d.scope = v.scope AND d.chat_num = v.chat_num "
        "AND d.message_id = v.message_id AND d.digest = v.digest))"
    )
    _VERSION = "SELECT count(*), coalesce(max(id), 0) FROM message_vectors WHERE scope = ?"
    _ALL = (
        "SELECT chat_num, message_id, vector FROM message_vectors "
        "WHERE scope = ? AND model = ? ORDER BY id"
    )
    # The scope leads the parameters through ``k``, as in pg_index_store's search; the
    # statement starts with SELECT, so it runs as a read.
    _CURRENT_PG = (
        "SELECT v.chat_num, v.message_id, c.id, substr(f.content, 1, k.chars) "
        "FROM (SELECT ?::text AS scope, ?::integer AS chars, ?::text AS model) AS k "
        "JOIN unnest(?::bigint[], ?::text[]) AS w (chat_num, message_id) ON true "
        "JOIN message_vectors v ON v.scope = k.scope AND v.model = k.model "
        "AND v.chat_num = w.chat_num AND v.message_id = w.message_id "
        "JOIN message_docs d ON d.scope = v.scope AND d.chat_num = v.chat_num "
        "AND d.message_id = v.message_id AND d.digest = v.digest "
        "JOIN message_fts f ON f.scope = d.scope AND f.doc = d.doc "
        "JOIN chats c ON c.scope = v.scope AND c.num = v.chat_num "
        "WHERE c.deleted_at IS NULL"
    )

    def __init__(self, db: PostgresScope) -> None:
        super().__init__(db)
        self._key = (db.name,)

    @override
    def current(
        self, model: str, keys: Sequence[tuple[int, str]], text_chars: int
    ) -> dict[tuple[int, str], tuple[str, str]]:
        """As on SQLite; the keys go as two arrays (see the module docstring)."""
        rows = self.db.query(
            self._CURRENT_PG,
            (
                *self._key,
                text_chars,
                model,
                [chat_num for chat_num, _ in keys],
                [message_id for _, message_id in keys],
            ),
        )
        return {(row[0], row[1]): (row[2], row[3]) for row in rows}
