"""Shared attachments on PostgreSQL: the twin of :mod:`backend.chats.attachment_pool`.

One set of tables holds every person's pool, each row and key led by ``scope`` (the name of
the person's directory scope), the first parameter of every statement::

    pool_attachments(scope, hash)            bytes, media_type, chunks
    pool_attachment_chunks(scope, hash, idx) data (bytea)
    pool_references(scope, num, hash)        the chats that read a payload here

The methods and invariants are the SQLite pool's (a payload stays while a chat of the same
directory references it; slices of at most ``MAX_INLINE_ROW_BYTES``); lists are arrays
(``= ANY(?)``) instead of ``json_each``. Two people holding the same payload hold a copy each:
a scope never reads or frees another's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import override

from backend.chats.attachment_pool import AttachmentPool
from backend.storage import Scope
from backend.storage.postgres import PostgresScope


def _m001_attachment_pool(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE pool_attachments (
            scope text COLLATE "C" NOT NULL,
            hash text COLLATE "C" NOT NULL,
            bytes bigint NOT NULL,
            media_type text NOT NULL,
            chunks integer NOT NULL,
            PRIMARY KEY (scope, hash)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE pool_attachment_chunks (
            scope text COLLATE "C" NOT NULL,
            hash text COLLATE "C" NOT NULL,
            idx integer NOT NULL,
            data bytea NOT NULL,
            PRIMARY KEY (scope, hash, idx)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE pool_references (
            scope text COLLATE "C" NOT NULL,
            num bigint NOT NULL,
            hash text COLLATE "C" NOT NULL,
            PRIMARY KEY (scope, num, hash)
        )
        """
    )
    db.execute("CREATE INDEX pool_references_by_hash ON pool_references (scope, hash)")


class PgAttachmentPool(AttachmentPool):
    """The shared attachments' SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_attachment_pool,)
    _SELECT_HELD = "SELECT hash FROM pool_attachments WHERE scope = ? AND hash = ANY(?)"
    _INSERT_META = (
        "INSERT INTO pool_attachments (scope, hash, bytes, media_type, chunks) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
    )
    _INSERT_CHUNK = (
        "INSERT INTO pool_attachment_chunks (scope, hash, idx, data) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING"
    )
    _INSERT_REFERENCE = (
        "INSERT INTO pool_references (scope, num, hash) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
    )
    _SELECT_CHAT_HASHES = "SELECT hash FROM pool_references WHERE scope = ? AND num = ?"
    _DELETE_CHAT_REFERENCES = "DELETE FROM pool_references WHERE scope = ? AND num = ?"
    _DELETE_ORPHAN_CHUNKS = """
        DELETE FROM pool_attachment_chunks AS c
        WHERE c.scope = ? AND c.hash = ANY(?)
          AND NOT EXISTS (
            SELECT 1 FROM pool_references AS r WHERE r.scope = c.scope AND r.hash = c.hash
          )
    """
    _DELETE_ORPHAN_META = """
        DELETE FROM pool_attachments AS a
        WHERE a.scope = ? AND a.hash = ANY(?)
          AND NOT EXISTS (
            SELECT 1 FROM pool_references AS r WHERE r.scope = a.scope AND r.hash = a.hash
          )
    """
    _SELECT_PAYLOADS = """
        SELECT a.hash, a.media_type, c.data
        FROM pool_attachments AS a
        JOIN pool_attachment_chunks AS c ON c.scope = a.scope AND c.hash = a.hash
        WHERE a.scope = ? AND a.hash = ANY(?)
        ORDER BY a.hash, c.idx
    """

    def __init__(self, db: PostgresScope, reader: Scope | None = None) -> None:
        super().__init__(db, reader)
        self._key = (db.name,)

    @override
    def _list_param(self, values: Sequence[str]) -> Any:
        return list(values)
