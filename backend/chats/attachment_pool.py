"""The directory's shared attachments: one copy of a payload that several chats point to.

A chat file keeps its own attachments (``backend.sessions`` stores each payload once per
file). A **fork** does not copy them into the new file: its messages keep their
``attachment:sha256:<hex>`` pointers, the payloads live here once per directory, and the
fork's file reads whatever it does not hold from here (``Sessions(shared_attachments=...)``).
So a chat forked ten times, or a fork of a fork, costs no more bytes than the first fork.

Tables (component ``chats.attachment_pool``, in the directory database)::

    pool_attachments(hash) PK              bytes, media_type, chunks     WITHOUT ROWID
    pool_attachment_chunks(hash, idx) PK   data                          WITHOUT ROWID
    pool_references(num, hash) PK          the chats (``chats.num``) that read a payload here

Invariants:

* **A payload stays while a chat references it.** References are per chat, not per message:
  purging a chat drops its references and the payloads nobody else references, in the same
  transaction (``drop_chat``). Deleting the chat a fork came from never touches the fork's
  payloads: the source kept its own copy in its own file.
* A payload is split into slices of at most ``MAX_INLINE_ROW_BYTES``, like message content.
* Reads go through their own connection (``reader``), whose lock is never held while another
  is taken: a chat file's read asks for payloads while it holds that file's lock.

Callers own the transactions of writes. The PostgreSQL twin
(:mod:`backend.chats.pg_attachment_pool`) keeps these methods and rewrites the statements
(class attributes) to take the directory's scope first (``_key``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from backend.sessions import AttachmentLoader, gather_payloads, payload_slices
from backend.storage import Database, Scope

COMPONENT = "chats.attachment_pool"


def _m001_attachment_pool(db: Database) -> None:
    db.execute(
        """
        CREATE TABLE pool_attachments (
            hash TEXT PRIMARY KEY,
            bytes INTEGER NOT NULL,
            media_type TEXT NOT NULL,
            chunks INTEGER NOT NULL
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE pool_attachment_chunks (
            hash TEXT NOT NULL,
            idx INTEGER NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY (hash, idx)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE pool_references (
            num INTEGER NOT NULL,
            hash TEXT NOT NULL,
            PRIMARY KEY (num, hash)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX pool_references_by_hash ON pool_references (hash)")


MIGRATIONS = (_m001_attachment_pool,)


class AttachmentPool:
    """SQL of the shared attachments (see the module docstring)."""

    migrations: tuple[Any, ...] = MIGRATIONS

    def __init__(self, db: Scope, reader: Scope | None = None) -> None:
        self.db = db
        self._reader = reader or db
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    def _list_param(self, values: Sequence[str]) -> Any:
        """A list as one parameter (``json_each(?)`` here)."""
        return json.dumps(list(values))

    def share(self, num: int, hashes: set[str], load: AttachmentLoader) -> None:
        """Let chat ``num`` read ``hashes``, storing the ones not here yet once, from ``load``."""
        if not hashes:
            return
        with self.db.transaction():
            for digest in sorted(hashes - self.held(hashes)):
                self.put(load({digest}))  # one at a time: memory is one payload
            self.add_references(num, hashes)

    _SELECT_HELD = (
        "SELECT hash FROM pool_attachments WHERE hash IN (SELECT value FROM json_each(?))"
    )

    def held(self, hashes: Iterable[str]) -> set[str]:
        """The hashes among ``hashes`` whose payload is here."""
        wanted = sorted(set(hashes))
        if not wanted:
            return set()
        return {
            row["hash"]
            for row in self.db.query(self._SELECT_HELD, (*self._key, self._list_param(wanted)))
        }

    _INSERT_META = (
        "INSERT OR IGNORE INTO pool_attachments (hash, bytes, media_type, chunks)"
        " VALUES (?, ?, ?, ?)"
    )
    _INSERT_CHUNK = (
        "INSERT OR IGNORE INTO pool_attachment_chunks (hash, idx, data) VALUES (?, ?, ?)"
    )

    def put(self, payloads: Mapping[str, tuple[bytes, str]]) -> None:
        """Store ``{hash: (bytes, media_type)}``; a hash already here is left as it is."""
        for digest, (data, media_type) in sorted(payloads.items()):
            pieces = payload_slices(data)
            inserted = self.db.execute(
                self._INSERT_META, (*self._key, digest, len(data), media_type, len(pieces))
            ).rowcount
            if inserted:
                self.db.executemany(
                    self._INSERT_CHUNK,
                    ((*self._key, digest, index, piece) for index, piece in enumerate(pieces)),
                )

    _INSERT_REFERENCE = "INSERT OR IGNORE INTO pool_references (num, hash) VALUES (?, ?)"

    def add_references(self, num: int, hashes: Iterable[str]) -> None:
        self.db.executemany(
            self._INSERT_REFERENCE, ((*self._key, num, digest) for digest in sorted(hashes))
        )

    _SELECT_CHAT_HASHES = "SELECT hash FROM pool_references WHERE num = ?"
    _DELETE_CHAT_REFERENCES = "DELETE FROM pool_references WHERE num = ?"
    _DELETE_ORPHAN_CHUNKS = """
        DELETE FROM pool_attachment_chunks
        WHERE hash IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (
            SELECT 1 FROM pool_references AS r WHERE r.hash = pool_attachment_chunks.hash
          )
    """
    _DELETE_ORPHAN_META = """
        DELETE FROM pool_attachments
        WHERE hash IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (
            SELECT 1 FROM pool_references AS r WHERE r.hash = pool_attachments.hash
          )
    """

    def drop_chat(self, num: int) -> None:
        """Forget chat ``num``'s references, and the payloads no other chat references."""
        rows = self.db.query(self._SELECT_CHAT_HASHES, (*self._key, num))
        hashes = [row["hash"] for row in rows]
        if not hashes:
            return
        self.db.execute(self._DELETE_CHAT_REFERENCES, (*self._key, num))
        listed = self._list_param(hashes)
        self.db.execute(self._DELETE_ORPHAN_CHUNKS, (*self._key, listed))
        self.db.execute(self._DELETE_ORPHAN_META, (*self._key, listed))

    _SELECT_PAYLOADS = """
        SELECT a.hash, a.media_type, c.data
        FROM pool_attachments AS a
        JOIN pool_attachment_chunks AS c ON c.hash = a.hash
        WHERE a.hash IN (SELECT value FROM json_each(?))
        ORDER BY a.hash, c.idx
    """

    def load(self, hashes: set[str]) -> dict[str, tuple[bytes, str]]:
        """``{hash: (bytes, media_type)}`` of the payloads here among ``hashes`` (a ``Loader``)."""
        if not hashes or self._reader.closed:
            return {}
        return gather_payloads(
            self._reader.query(
                self._SELECT_PAYLOADS, (*self._key, self._list_param(sorted(hashes)))
            )
        )
