"""The conversation file's schema: its tables, their migrations, and the retired-file mark.

Tables, primary key first. All are ``WITHOUT ROWID`` with a composite primary key and no
secondary index, so one logical write is one row write; the FTS table is virtual and exists
only once something searched (it is created by :mod:`backend.sessions.search_index`):

    session_messages (session_id, id) seq, parent_id, type, role, content, content_chunks,
                                      token_estimate, created_at, content_hash
    session_message_chunks (session_id, id, idx) content          continuation slices 1..n
    session_compactions (session_id, id) seq, summary, from_message_id, to_message_id, created_at
    session_config (session_id, key) value
    session_attachment_meta (hash) bytes, media_type, chunks
    session_attachment_chunks (hash, idx) data
    session_attachment_refs (session_id, message_id, hash)
    session_fts fts5(id, session_id, role, content), rowid = fts_rowid(session_id, id)

Invariants:

* Migrations are append-only: a new schema version is a new function at the end of
  :data:`MIGRATIONS`, never an edit, and opening a store runs the missing ones.
* ``content_hash`` is the raw 32-byte sha256 of the stored JSON (a BLOB, not 64 hex
  characters: on a small text row the hex form measurably slowed every append). It is what an
  update compares to detect a no-op; a row without one (NULL) is compared by full content.
* **A retired file refuses writes.** Purging a chat (or replacing its generation) deletes its
  file, but a connection another process still holds would keep writing to the unlinked
  inode: acknowledged, then lost. So whoever removes a file first marks it retired
  (``PRAGMA user_version =`` :data:`RETIRED_FILE_MARK`, one commit). That commit moves
  ``data_version`` for every other connection, which is when a store reads the mark (see
  ``SessionStore.begin_write``), so the check costs nothing on the write path unless another
  connection committed.
"""

from __future__ import annotations

from backend.storage import Database, Scope

MIGRATION_COMPONENT = "sessions"
RETIRED_FILE_MARK = 0x52455449  # "RETI": the user_version of a file about to be deleted
_READ_MARK = "PRAGMA user_version"
_MARK_RETIRED = f"PRAGMA user_version = {RETIRED_FILE_MARK}"

_CREATE_TABLES = (
    """
    CREATE TABLE IF NOT EXISTS session_messages (
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        parent_id TEXT,
        type TEXT NOT NULL DEFAULT 'message',
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        content_chunks INTEGER NOT NULL DEFAULT 0,
        token_estimate INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        content_hash BLOB,
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS session_message_chunks (
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        content TEXT NOT NULL,
        PRIMARY KEY (session_id, id, idx)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS session_compactions (
        session_id TEXT NOT NULL,
        id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        summary TEXT NOT NULL,
        from_message_id TEXT NOT NULL,
        to_message_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, id)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS session_config (
        session_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT,
        PRIMARY KEY (session_id, key)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS session_attachment_meta (
        hash TEXT NOT NULL PRIMARY KEY,
        bytes INTEGER NOT NULL,
        media_type TEXT NOT NULL,
        chunks INTEGER NOT NULL
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS session_attachment_chunks (
        hash TEXT NOT NULL,
        idx INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (hash, idx)
    ) WITHOUT ROWID
    """,
    """
    CREATE TABLE IF NOT EXISTS session_attachment_refs (
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (session_id, message_id, hash)
    ) WITHOUT ROWID
    """,
)


def m001_create_session_tables(db: Scope) -> None:
    """The conversation store's tables (schema version 1)."""
    for statement in _CREATE_TABLES:
        db.execute(statement)


MIGRATIONS = (m001_create_session_tables,)
"""Append-only. A new schema version is a new function at the end, never an edit."""

SCHEMA_VERSION = len(MIGRATIONS)


def has_session_tables(database: Database) -> bool:
    """Whether ``database`` holds a conversation store (without creating one)."""
    return database.table_exists("session_messages")


def mark_retired(database: Scope) -> None:
    """Mark the file retired: every store on it refuses writes from its next one on.

    One commit (it waits for a write in progress, so that write lands before the mark).
    """
    database.execute(_MARK_RETIRED)


def is_marked_retired(database: Scope) -> bool:
    row = database.query_one(_READ_MARK)
    return row is not None and row[0] == RETIRED_FILE_MARK
