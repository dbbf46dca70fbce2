"""The chat index on PostgreSQL: the twin of :mod:`backend.chats.chat_records`.

One set of tables holds every person's directory, so every row and every key leads with
``scope`` (the name of the person's directory scope) and every statement takes it as its
first parameter (:mod:`backend.agents.pg_store`'s rule). The methods and invariants are the
SQLite store's; the schema and the statements that read differently are this module's:

* ``num`` is the directory's own numbering, as SQLite's rowid is: the next number is the
  scope's highest plus one, taken inside the insert's transaction (which holds the scope's
  write lock), so numbers grow in commit order within a directory (the watcher's watermark).
* ``chat_titles(scope, num, tsv, tokens)`` replaces the FTS5 table: each title as a ``tsvector`` of
  FTS5's own title tokens (:mod:`backend.sessions.pg_fts`), queried with the same query read
  back as a ``tsquery``, so a title search finds what it finds on SQLite; the best match
  comes first by FTS5's own bm25 (:mod:`backend.chats.pg_title_rank`, from each title's token
  count kept beside it), ties newest first as on SQLite.
* The id key (``directory_meta``) is written by the first open of each scope, not by the
  migration: migrations run once per database, and every directory needs its own key.
"""

from __future__ import annotations

from typing_extensions import override

from backend.chats.chat_records import (
    ID_KEY,
    RECORD_COLUMNS,
    SUMMARY_COLUMNS,
    ChatRecordStore,
    summary_from_row,
)
from backend.chats.ids import new_id_key
from backend.chats.pg_title_rank import bm25_rank, idf, phrases_of
from backend.chats.values import ChatSummary
from backend.sessions.fts_tokens import TITLES
from backend.sessions.pg_fts import document_parts, match_tsquery
from backend.storage.postgres import PostgresScope


def _m001_directory(db: PostgresScope) -> None:
    db.execute(
        """
        CREATE TABLE directory_meta (
            scope text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            value bytea NOT NULL,
            PRIMARY KEY (scope, key)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE chats (
            scope text COLLATE "C" NOT NULL,
            num bigint NOT NULL,
            id text COLLATE "C" NOT NULL,
            title text NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            last_message_preview text,
            generation bigint NOT NULL DEFAULT 1,
            deleted_at bigint,
            purged_at bigint,
            archived_at bigint,
            unarchived_at bigint,
            PRIMARY KEY (scope, num),
            UNIQUE (scope, id)
        )
        """
    )
    for name, columns, where in (
        ("chats_live_by_update", "updated_at DESC, id DESC", "deleted_at IS NULL"),
        (
            "chats_awaiting_purge",
            "deleted_at",
            "deleted_at IS NOT NULL AND purged_at IS NULL",
        ),
        (
            "chats_listed_by_update",
            "updated_at DESC, id DESC",
            "deleted_at IS NULL AND archived_at IS NULL",
        ),
        (
            "chats_archived_by_update",
            "updated_at DESC, id DESC",
            "deleted_at IS NULL AND archived_at IS NOT NULL",
        ),
    ):
        db.execute(f"CREATE INDEX {name} ON chats (scope, {columns}) WHERE {where}")
    db.execute(
        """
        CREATE TABLE chat_titles (
            scope text COLLATE "C" NOT NULL,
            num bigint NOT NULL,
            tsv tsvector NOT NULL,
            tokens integer NOT NULL,
            PRIMARY KEY (scope, num)
        )
        """
    )
    db.execute("CREATE INDEX chat_titles_tsv ON chat_titles USING gin (tsv)")


def _m002_pins_and_temporary(db: PostgresScope) -> None:
    """Pinned and temporary chats (issue 29): existing rows start unpinned and lasting."""
    for column in ("pinned_at", "temporary_expires_at", "temporary_held_until"):
        db.execute(f"ALTER TABLE chats ADD COLUMN {column} bigint")
    db.execute(
        "CREATE INDEX chats_pinned ON chats (scope, pinned_at DESC, id DESC) "
        "WHERE deleted_at IS NULL AND pinned_at IS NOT NULL"
    )
    db.execute(
        "CREATE INDEX chats_temporary ON chats (scope, temporary_expires_at) "
        "WHERE deleted_at IS NULL AND temporary_expires_at IS NOT NULL"
    )


_COLUMNS = RECORD_COLUMNS
_SUMMARY_COLUMNS = SUMMARY_COLUMNS
# UPDATE and DELETE take the scope first through a one-row CTE, so every statement's first
# parameter is the scope whatever the order of the rest.
_SCOPED = "WITH k AS (SELECT ?::text AS scope) "
_TITLES_JOIN = "FROM chat_titles t JOIN chats c ON c.scope = t.scope AND c.num = t.num"


def scoped_update(assignments: str, where: str) -> str:
    """``UPDATE chats`` of the key's scope (``where`` names the row as ``c``)."""
    return f"{_SCOPED}UPDATE chats c SET {assignments} FROM k WHERE c.scope = k.scope AND {where}"


def title_tsvector(title: str) -> str:
    """A title's FTS5 tokens as one ``tsvector`` literal (a title is one part: 200 chars)."""
    parts = document_parts(title, TITLES)
    assert len(parts) <= 1, "a title never holds more tokens than one part takes"
    return parts[0].tsvector if parts else ""


class PgChatRecordStore(ChatRecordStore):
    """The chat index's SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_directory, _m002_pins_and_temporary)

    SELECT_META = "SELECT value FROM directory_meta WHERE scope = ? AND key = ?"
    PUT_META = (
        "INSERT INTO directory_meta (scope, key, value) VALUES (?, ?, ?) "
        "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value"
    )
    DROP_META = "DELETE FROM directory_meta WHERE scope = ? AND key = ?"
    _ENSURE_ID_KEY = (
        "INSERT INTO directory_meta (scope, key, value) VALUES (?, ?, ?) "
        "ON CONFLICT (scope, key) DO NOTHING"
    )

    SELECT_BY_ID = f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? AND c.id = ?"
    SELECT_BY_NUM = f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? AND c.num = ?"
    LIST_LIVE = (
        f"SELECT {_SUMMARY_COLUMNS} FROM chats c WHERE c.scope = ? AND c.deleted_at IS NULL "
        "AND c.archived_at {archived} AND c.temporary_expires_at IS NULL {cursor} "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    LIST_LIVE_MATCHING = (
        f"SELECT {_SUMMARY_COLUMNS} {_TITLES_JOIN} "
        "WHERE t.scope = ? AND t.tsv @@ ?::tsquery AND c.deleted_at IS NULL "
        "AND c.archived_at {archived} AND c.temporary_expires_at IS NULL {cursor} "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    SEARCH_TITLES = (
        f"SELECT {_SUMMARY_COLUMNS} {_TITLES_JOIN} "
        "WHERE t.scope = ? AND t.tsv @@ ?::tsquery AND c.deleted_at IS NULL "
        "AND c.temporary_expires_at IS NULL"
    )
    _TITLE_STATS = (
        "SELECT count(*), coalesce(sum(t.tokens), 0){hits} "
        "FROM (SELECT ?::text AS scope{queries}) AS k JOIN chat_titles t ON t.scope = k.scope"
    )
    SELECT_LIVE_NUMS = (
        "SELECT num, id, generation FROM chats WHERE scope = ? AND deleted_at IS NULL "
        "AND temporary_expires_at IS NULL ORDER BY updated_at DESC, id DESC"
    )
    SELECT_UNPURGED = "SELECT num, id, generation FROM chats WHERE scope = ? AND purged_at IS NULL"
    SELECT_DUE = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? "
        "AND c.deleted_at IS NOT NULL AND c.purged_at IS NULL AND c.deleted_at <= ? "
        "ORDER BY c.deleted_at LIMIT ?"
    )
    SELECT_UNTOUCHED = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? "
        "AND c.deleted_at IS NULL AND c.archived_at IS NULL AND c.updated_at < ? "
        "AND c.temporary_expires_at IS NULL AND coalesce(c.unarchived_at, 0) < ? "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    # A read must start with SELECT (the scope runs any other statement as a write, which
    # would move the directory's version), so the scope comes in through FROM here.
    WATERMARKS = (
        "SELECT (SELECT coalesce(max(num), 0) FROM chats c WHERE c.scope = k.scope), "
        "(SELECT coalesce(max(updated_at), 0) FROM chats c "
        "WHERE c.scope = k.scope AND deleted_at IS NULL), "
        "(SELECT coalesce(max(deleted_at), 0) FROM chats c "
        "WHERE c.scope = k.scope AND deleted_at IS NOT NULL AND purged_at IS NULL) "
        "FROM (SELECT ?::text AS scope) AS k"
    )
    CREATED_AFTER = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? AND c.num > ? ORDER BY c.num LIMIT ?"
    )
    UPDATED_AFTER = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? AND c.deleted_at IS NULL "
        "AND c.updated_at > ? ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    DELETED_AFTER = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.scope = ? AND c.deleted_at IS NOT NULL "
        "AND c.purged_at IS NULL AND c.deleted_at > ? ORDER BY c.deleted_at LIMIT ?"
    )

    INSERT = (
        _SCOPED + "INSERT INTO chats (scope, num, id, title, created_at, updated_at, generation) "
        "SELECT k.scope, (SELECT coalesce(max(c.num), 0) + 1 FROM chats c "
        "WHERE c.scope = k.scope), ?, ?, ?::bigint, ?::bigint, 1 FROM k RETURNING num"
    )
    RECREATE = scoped_update(
        "title = ?, created_at = ?, updated_at = ?, last_message_preview = NULL, "
        "generation = c.generation + 1, deleted_at = NULL, purged_at = NULL, "
        "archived_at = NULL, unarchived_at = NULL, pinned_at = NULL, "
        "temporary_expires_at = NULL, temporary_held_until = NULL",
        "c.num = ?",
    )
    RENAME = scoped_update("title = ?", "c.num = ?")
    BACKDATE = scoped_update(
        "created_at = ?, updated_at = ?, last_message_preview = ?", "c.num = ?"
    )
    SOFT_DELETE = scoped_update("deleted_at = ?", "c.num = ? AND c.deleted_at IS NULL")
    RESTORE = scoped_update("deleted_at = NULL", "c.num = ? AND c.purged_at IS NULL")
    ARCHIVE = scoped_update("archived_at = ?", "c.num = ? AND c.archived_at IS NULL")
    UNARCHIVE = scoped_update(
        "archived_at = NULL, unarchived_at = ?", "c.num = ? AND c.archived_at IS NOT NULL"
    )
    RECORD_TURN = scoped_update("updated_at = ?, last_message_preview = ?", "c.num = ?")
    MARK_PURGED = scoped_update(
        "purged_at = ?",
        "c.num = ? AND c.generation = ? AND c.deleted_at IS NOT NULL AND c.purged_at IS NULL",
    )
    DELETE_TITLE = "DELETE FROM chat_titles WHERE scope = ? AND num = ?"
    _PUT_TITLE = (
        "INSERT INTO chat_titles (scope, num, tsv, tokens) VALUES (?, ?, ?::tsvector, ?) "
        "ON CONFLICT (scope, num) DO UPDATE SET tsv = excluded.tsv, tokens = excluded.tokens"
    )

    def __init__(self, db: PostgresScope, search_db: PostgresScope | None = None) -> None:
        super().__init__(db, search_db)
        self._key = (db.name,)
        if self.db.query_one(self.SELECT_META, (*self._key, ID_KEY)) is None:
            self.db.execute(self._ENSURE_ID_KEY, (*self._key, ID_KEY, new_id_key()))

    @override
    def _title_query(self, match: str) -> str | None:
        return match_tsquery(match, TITLES)

    @override
    def search_titles(self, match: str, limit: int) -> list[ChatSummary]:
        """Best title first by FTS5's own bm25 (:mod:`backend.chats.pg_title_rank`), then
        newest first, as on SQLite; archived chats too."""
        query = match_tsquery(match, TITLES)
        if query is None:
            return []
        rows = self.search_db.query(self.SEARCH_TITLES, (*self._key, query))
        if not rows:
            return []
        phrases = phrases_of(match)
        stats = self.search_db.query_one(
            self._TITLE_STATS.format(
                hits="".join(
                    f", count(*) FILTER (WHERE t.tsv @@ k.q{i})" for i in range(len(phrases))
                ),
                queries="".join(f", ?::tsquery AS q{i}" for i in range(len(phrases))),
            ),
            (*self._key, *(match_tsquery(phrase.match, TITLES) for phrase in phrases)),
        )
        assert stats is not None
        titles, tokens = int(stats[0]), int(stats[1])
        idfs = [idf(titles, int(stats[2 + i])) for i in range(len(phrases))]
        avgdl = tokens / titles
        summaries = [summary_from_row(row) for row in rows]
        summaries.sort(key=lambda s: s.id, reverse=True)
        summaries.sort(key=lambda s: s.updated_at, reverse=True)
        summaries.sort(key=lambda s: bm25_rank(phrases, idfs, TITLES.tokens(s.title), avgdl))
        return summaries[:limit]

    @override
    def _insert_title(self, num: int, title: str) -> None:
        params = (*self._key, num, title_tsvector(title), len(TITLES.tokens(title)))
        self.db.execute(self._PUT_TITLE, params)

    @override
    def _set_title_index(self, num: int, title: str) -> None:
        self._insert_title(num, title)
