"""The conversation tables on PostgreSQL: the twin of :mod:`backend.sessions.schema`.

The same tables and columns as a conversation file's, for every conversation at once: each
leads with ``scope`` (the conversation's scope name, ``docs/architecture.md`` "Storage
engines") in every key and every statement. Text keys are ``COLLATE "C"`` (byte order, as on
SQLite); ``BLOB`` is ``bytea``.

Two tables have no SQLite twin, because a file answers their questions by existing:

    session_scopes (scope) retired_at      the conversation exists; retired once ``retired_at``
    session_search_scopes (scope)          its search index was built (SQLite: the FTS table)

**A retired conversation refuses writes**, as a retired file does: marking it is one commit
(``retired_at``), which moves the scope's ``data_version`` for everyone else, when a store
reads the mark (``SessionStore.begin_write``). :func:`drop_rows` deletes everything a
conversation keeps (the PostgreSQL meaning of deleting its file) but the retired mark;
:mod:`backend.sessions.pg_files` finds the scope a path names for both.
"""

from __future__ import annotations

from backend.clock import now_ms
from backend.sessions.scope_rows import other_rows_droppers
from backend.storage import Scope
from backend.storage.postgres import PostgresScope

_KEY = 'scope text COLLATE "C" NOT NULL'
_TEXT_KEY = 'text COLLATE "C" NOT NULL'

_CREATE_TABLES = (
    """
    CREATE TABLE session_scopes (
        scope text COLLATE "C" PRIMARY KEY,
        retired_at bigint
    )
    """,
    f"""
    CREATE TABLE session_messages (
        {_KEY},
        session_id {_TEXT_KEY},
        id {_TEXT_KEY},
        seq bigint NOT NULL,
        parent_id text COLLATE "C",
        type text NOT NULL DEFAULT 'message',
        role text NOT NULL,
        content text NOT NULL,
        content_chunks integer NOT NULL DEFAULT 0,
        token_estimate bigint NOT NULL DEFAULT 0,
        created_at bigint NOT NULL,
        content_hash bytea,
        PRIMARY KEY (scope, session_id, id)
    )
    """,
    # The tail (max seq) and insertion-order listings read by seq: SQLite scans the session's
    # rows for them, PostgreSQL would scan every conversation's without this index.
    "CREATE INDEX session_messages_by_seq ON session_messages (scope, session_id, seq)",
    f"""
    CREATE TABLE session_message_chunks (
        {_KEY},
        session_id {_TEXT_KEY},
        id {_TEXT_KEY},
        idx integer NOT NULL,
        content text NOT NULL,
        PRIMARY KEY (scope, session_id, id, idx)
    )
    """,
    f"""
    CREATE TABLE session_compactions (
        {_KEY},
        session_id {_TEXT_KEY},
        id {_TEXT_KEY},
        seq bigint NOT NULL,
        summary text NOT NULL,
        from_message_id text NOT NULL,
        to_message_id text NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (scope, session_id, id)
    )
    """,
    f"""
    CREATE TABLE session_config (
        {_KEY},
        session_id {_TEXT_KEY},
        key {_TEXT_KEY},
        value text,
        PRIMARY KEY (scope, session_id, key)
    )
    """,
    f"""
    CREATE TABLE session_attachment_meta (
        {_KEY},
        hash {_TEXT_KEY},
        bytes bigint NOT NULL,
        media_type text NOT NULL,
        chunks integer NOT NULL,
        PRIMARY KEY (scope, hash)
    )
    """,
    f"""
    CREATE TABLE session_attachment_chunks (
        {_KEY},
        hash {_TEXT_KEY},
        idx integer NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (scope, hash, idx)
    )
    """,
    f"""
    CREATE TABLE session_attachment_refs (
        {_KEY},
        session_id {_TEXT_KEY},
        message_id {_TEXT_KEY},
        hash {_TEXT_KEY},
        PRIMARY KEY (scope, session_id, message_id, hash)
    )
    """,
    'CREATE TABLE session_search_scopes (scope text COLLATE "C" PRIMARY KEY)',
    f"""
    CREATE TABLE session_search (
        {_KEY},
        doc bigint NOT NULL,
        id {_TEXT_KEY},
        session_id {_TEXT_KEY},
        role text NOT NULL,
        content text NOT NULL,
        PRIMARY KEY (scope, doc)
    )
    """,
    "CREATE INDEX session_search_by_session ON session_search (scope, session_id)",
    f"""
    CREATE TABLE session_search_parts (
        {_KEY},
        doc bigint NOT NULL,
        part integer NOT NULL,
        tsv tsvector NOT NULL,
        PRIMARY KEY (scope, doc, part),
        FOREIGN KEY (scope, doc) REFERENCES session_search ON DELETE CASCADE
    )
    """,
    "CREATE INDEX session_search_parts_tsv ON session_search_parts USING gin (tsv)",
)


def m001_create_session_tables(db: PostgresScope) -> None:
    """The conversation store's tables (schema version 1)."""
    for statement in _CREATE_TABLES:
        db.execute(statement)


MIGRATIONS = (m001_create_session_tables,)
"""Append-only, as the SQLite list."""

# Every table a conversation keeps rows in, children before parents.
_OWNED_TABLES = (
    "session_search_parts",
    "session_search",
    "session_search_scopes",
    "session_message_chunks",
    "session_messages",
    "session_compactions",
    "session_config",
    "session_attachment_refs",
    "session_attachment_chunks",
    "session_attachment_meta",
)
_DROP_STATEMENTS = tuple(f"DELETE FROM {table} WHERE scope = ?" for table in _OWNED_TABLES)
_SELECT_SCOPE = "SELECT retired_at FROM session_scopes WHERE scope = ?"
_REGISTER = "INSERT INTO session_scopes (scope) VALUES (?) ON CONFLICT (scope) DO NOTHING"
_MARK_RETIRED = (
    "INSERT INTO session_scopes (scope, retired_at) VALUES (?, ?) ON CONFLICT (scope)"
    " DO UPDATE SET retired_at = coalesce(session_scopes.retired_at, excluded.retired_at)"
)


def register(scope: PostgresScope) -> bool:
    """Record that ``scope`` holds a conversation; whether it is retired (one read when it
    was registered before, a write only the first time)."""
    row = scope.query_one(_SELECT_SCOPE, (scope.name,))
    if row is None:
        scope.execute(_REGISTER, (scope.name,))
        return False
    return row[0] is not None


def postgres_scope(database: Scope) -> PostgresScope:
    """``database`` as the PostgreSQL scope the twins need (a clear error for anything else)."""
    if not isinstance(database, PostgresScope):
        raise TypeError(f"a PostgreSQL twin needs a PostgreSQL scope, not {type(database)}")
    return database


def holds_conversation(scope: PostgresScope) -> bool:
    """Whether a conversation was ever opened on ``scope`` (a dropped one still counts)."""
    return scope.query_one(_SELECT_SCOPE, (scope.name,)) is not None


def is_marked_retired(scope: PostgresScope) -> bool:
    row = scope.query_one(_SELECT_SCOPE, (scope.name,))
    return row is not None and row[0] is not None


def mark_retired(scope: PostgresScope) -> None:
    """Mark the conversation retired: every store on it refuses writes from its next one on.

    One commit; it waits for a write in progress (the scope's write lock), so that write
    lands before the mark.
    """
    with scope.transaction():
        scope.execute(_MARK_RETIRED, (scope.name, now_ms()))


def drop_rows(scope: PostgresScope) -> None:
    """Delete every row of the conversation of ``scope`` but its registration, which stays
    as a retired tombstone (one commit): a store still open on it, here or on another machine,
    refuses writes instead of writing rows nobody will read. Other packages' rows in the
    scope go in the same commit (``scope_rows.drop_with_conversations``)."""
    with scope.transaction():
        scope.execute(_MARK_RETIRED, (scope.name, now_ms()))
        for statement in _DROP_STATEMENTS:
            scope.execute(statement, (scope.name,))
        for dropper in other_rows_droppers():
            dropper(scope)
