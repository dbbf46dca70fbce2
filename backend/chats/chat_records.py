"""The chat index: one row per chat id, title search, the soft-delete lifecycle. SQL only.

Tables (migration component ``chats.directory``, its first name, kept: it is stored in each file)::

    directory_meta(key PK, value)   WITHOUT ROWID   per-directory secrets (the id key)
    chats(num INTEGER PK, id UNIQUE, title, created_at, updated_at, last_message_preview,
          generation, deleted_at, purged_at, archived_at, unarchived_at,
          pinned_at, temporary_expires_at, temporary_held_until)
    chat_titles  fts5(title)   rowid = chats.num

Invariants:

* A chat is **live** iff ``deleted_at IS NULL``. Every list and search filters on it, so a
  soft delete hides the chat everywhere in the one statement that sets ``deleted_at``.
* A live chat is **archived** iff ``archived_at IS NOT NULL``: the main list leaves it out,
  the archived list shows only such chats, and searches (titles, messages) still find it.
  This column is the one place the fact is kept and ``set_archived`` its one writer (the
  conversation record's ``archived_at`` of seed 004 is read from here, never written).
  ``unarchived_at`` counts as a touch for the "archive chats untouched for N days" policy, so
  a chat the user just took back out is not archived again at the next pass.
* A live chat is **pinned** iff ``pinned_at IS NOT NULL``, and **temporary** iff
  ``temporary_expires_at IS NOT NULL`` (:mod:`backend.chats.chat_marks` holds their SQL and
  rules). A temporary chat is in no list and no title search here.
* ``purged_at`` is set once the chat's files are gone; the row stays as a tombstone so that
  re-creating the id moves ``generation`` forward (a stale writer of generation *n* can
  never reach generation *n+1*, whose file name differs).
* ``chats`` keeps a rowid (``num``) on purpose, unlike the ``WITHOUT ROWID`` tables: FTS5
  tables are keyed by an integer rowid, and the message index stores the 8-byte ``num``
  instead of the 23-character id in every document row.
* Newest-first listing reads a partial index in order (``chats_listed_by_update`` for the
  main list, ``chats_archived_by_update`` for the archived one) and stops after ``limit``
  rows: the first page costs the same with 100 or 100,000 chats, archived or not. The
  ``(updated_at, id)`` order is total, so a cursor is stable when timestamps tie.

Callers (``Chats`` and its parts) own transactions and events; this module never commits on
its own and never touches files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from backend.chats.ids import new_id_key
from backend.chats.values import ChatCursor, ChatSummary
from backend.storage import Scope

COMPONENT = "chats.directory"
ID_KEY = "id_key"


def _m001_directory_meta(db: Scope) -> None:
    db.execute(
        "CREATE TABLE directory_meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
    )
    db.execute("INSERT INTO directory_meta (key, value) VALUES (?, ?)", (ID_KEY, new_id_key()))


def _m002_chats(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE chats (
            num INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            last_message_preview TEXT,
            generation INTEGER NOT NULL DEFAULT 1,
            deleted_at INTEGER,
            purged_at INTEGER
        )
        """
    )
    db.execute(
        "CREATE INDEX chats_live_by_update ON chats (updated_at DESC, id DESC) "
        "WHERE deleted_at IS NULL"
    )
    db.execute(
        "CREATE INDEX chats_awaiting_purge ON chats (deleted_at) "
        "WHERE deleted_at IS NOT NULL AND purged_at IS NULL"
    )
    db.execute(
        "CREATE VIRTUAL TABLE chat_titles USING fts5("
        "title, tokenize = 'unicode61 remove_diacritics 2')"
    )


def _m003_archive(db: Scope) -> None:
    """Archived chats leave the main list; existing rows start unarchived."""
    db.execute("ALTER TABLE chats ADD COLUMN archived_at INTEGER")
    db.execute("ALTER TABLE chats ADD COLUMN unarchived_at INTEGER")
    db.execute(
        "CREATE INDEX chats_listed_by_update ON chats (updated_at DESC, id DESC) "
        "WHERE deleted_at IS NULL AND archived_at IS NULL"
    )
    db.execute(
        "CREATE INDEX chats_archived_by_update ON chats (updated_at DESC, id DESC) "
        "WHERE deleted_at IS NULL AND archived_at IS NOT NULL"
    )


def _m004_pins_and_temporary(db: Scope) -> None:
    """Pinned and temporary chats (issue 29): existing rows start unpinned and lasting."""
    db.execute("ALTER TABLE chats ADD COLUMN pinned_at INTEGER")
    db.execute("ALTER TABLE chats ADD COLUMN temporary_expires_at INTEGER")
    db.execute("ALTER TABLE chats ADD COLUMN temporary_held_until INTEGER")
    db.execute(
        "CREATE INDEX chats_pinned ON chats (pinned_at DESC, id DESC) "
        "WHERE deleted_at IS NULL AND pinned_at IS NOT NULL"
    )
    db.execute(
        "CREATE INDEX chats_temporary ON chats (temporary_expires_at) "
        "WHERE deleted_at IS NULL AND temporary_expires_at IS NOT NULL"
    )


MIGRATIONS = (_m001_directory_meta, _m002_chats, _m003_archive, _m004_pins_and_temporary)


@dataclass(frozen=True, slots=True)
class ChatRecord:
    """A whole ``chats`` row; internal (the public projection is :class:`ChatSummary`)."""

    num: int
    id: str
    title: str
    created_at: int
    updated_at: int
    last_message_preview: str | None
    generation: int
    deleted_at: int | None
    purged_at: int | None
    archived_at: int | None
    unarchived_at: int | None
    pinned_at: int | None = None
    temporary_expires_at: int | None = None
    temporary_held_until: int | None = None

    @property
    def live(self) -> bool:
        return self.deleted_at is None

    @property
    def temporary(self) -> bool:
        return self.temporary_expires_at is not None

    def summary(self) -> ChatSummary:
        return ChatSummary(
            id=self.id,
            title=self.title,
            created_at=self.created_at,
            updated_at=self.updated_at,
            last_message_preview=self.last_message_preview,
            archived_at=self.archived_at,
            pinned_at=self.pinned_at,
            expires_at=self.temporary_expires_at,
        )


RECORD_COLUMNS = (
    "c.num, c.id, c.title, c.created_at, c.updated_at, c.last_message_preview, "
    "c.generation, c.deleted_at, c.purged_at, c.archived_at, c.unarchived_at, "
    "c.pinned_at, c.temporary_expires_at, c.temporary_held_until"
)
SUMMARY_COLUMNS = (
    "c.id, c.title, c.created_at, c.updated_at, c.last_message_preview, c.archived_at, "
    "c.pinned_at, c.temporary_expires_at"
)


def record_from_row(row: Any) -> ChatRecord:
    return ChatRecord(*row)


def summary_from_row(row: Any) -> ChatSummary:
    return ChatSummary(
        id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_message_preview=row["last_message_preview"],
        archived_at=row["archived_at"],
        pinned_at=row["pinned_at"],
        expires_at=row["temporary_expires_at"],
    )


class ChatRecordStore:
    """SQL for the ``chats`` table and its title index, on the directory's scope.

    Its statements are class attributes: the PostgreSQL twin
    (:mod:`backend.chats.pg_chat_records`) rewrites them to take the directory's scope as
    their first parameter (``_key``, empty here), and every method runs on both engines.
    """

    migrations: tuple[Callable[[Any], None], ...] = MIGRATIONS

    def __init__(self, db: Scope, search_db: Scope | None = None) -> None:
        self.db = db
        self.search_db = search_db or db
        """Title searches read here: a connection of their own never holds up the writers."""
        self._key: tuple[str, ...] = ()
        db.migrate(COMPONENT, self.migrations)

    # ── meta ────────────────────────────────────────────────────────

    SELECT_META = "SELECT value FROM directory_meta WHERE key = ?"

    def id_key(self) -> bytes:
        row = self.db.query_one(self.SELECT_META, (*self._key, ID_KEY))
        assert row is not None, "migration _m001_directory_meta stores the id key"
        return bytes(row["value"])

    PUT_META = (
        "INSERT INTO directory_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    DROP_META = "DELETE FROM directory_meta WHERE key = ?"

    def load_setting(self, key: str) -> str | None:
        """A per-directory setting (the user's), stored as text; ``None`` when unset."""
        row = self.db.query_one(self.SELECT_META, (*self._key, key))
        return None if row is None else bytes(row["value"]).decode()

    def put_setting(self, key: str, value: str | None) -> None:
        if value is None:
            self.db.execute(self.DROP_META, (*self._key, key))
        else:
            self.db.execute(self.PUT_META, (*self._key, key, value.encode()))

    # ── reads ───────────────────────────────────────────────────────

    SELECT_BY_ID = f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.id = ?"
    SELECT_BY_NUM = f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.num = ?"

    def load(self, chat_id: str) -> ChatRecord | None:
        """The row for ``chat_id`` in any state (live, soft-deleted, purged)."""
        row = self.db.query_one(self.SELECT_BY_ID, (*self._key, chat_id))
        return record_from_row(row) if row else None

    def load_num(self, num: int) -> ChatRecord | None:
        row = self.db.query_one(self.SELECT_BY_NUM, (*self._key, num))
        return record_from_row(row) if row else None

    LIST_LIVE = (
        f"SELECT {SUMMARY_COLUMNS} "
        "FROM chats c WHERE c.deleted_at IS NULL AND c.archived_at {archived} "
        "AND c.temporary_expires_at IS NULL {cursor} "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    LIST_LIVE_MATCHING = (
        f"SELECT {SUMMARY_COLUMNS} "
        "FROM chat_titles t JOIN chats c ON c.num = t.rowid "
        "WHERE chat_titles MATCH ? AND c.deleted_at IS NULL AND c.archived_at {archived} "
        "AND c.temporary_expires_at IS NULL {cursor} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    _NOT_ARCHIVED = "IS NULL"
    _ARCHIVED = "IS NOT NULL"
    _BEFORE_TIME = "AND c.updated_at < ?"
    _BEFORE_CURSOR = "AND (c.updated_at, c.id) < (?, ?)"

    def list_live(
        self,
        limit: int,
        before: ChatCursor | int | None,
        match: str | None = None,
        *,
        archived: bool = False,
    ) -> list[ChatSummary]:
        """Newest ``updated_at`` first; ``match`` is an already-quoted FTS5 title query.

        The main list (``archived=False``) or the archived one (``archived=True``), never both.
        """
        params: list[Any] = list(self._key)
        if match is not None:
            engine_match = self._title_query(match)
            if engine_match is None:
                return []
            params.append(engine_match)
        cursor = ""
        if isinstance(before, ChatCursor):
            cursor = self._BEFORE_CURSOR
            params += [before.updated_at, before.id]
        elif before is not None:
            cursor = self._BEFORE_TIME
            params.append(before)
        which = self._ARCHIVED if archived else self._NOT_ARCHIVED
        template = self.LIST_LIVE if match is None else self.LIST_LIVE_MATCHING
        params.append(limit)
        db = self.db if match is None else self.search_db
        rows = db.query(template.format(archived=which, cursor=cursor), params)
        return [summary_from_row(row) for row in rows]

    def _title_query(self, match: str) -> str | None:
        """``match`` (an FTS5 query ``backend.chats.text`` built) as this engine asks it;
        ``None`` when it can find nothing."""
        return match

    SEARCH_TITLES = (
        f"SELECT {SUMMARY_COLUMNS} "
        "FROM chat_titles t JOIN chats c ON c.num = t.rowid "
        "WHERE chat_titles MATCH ? AND c.deleted_at IS NULL AND c.temporary_expires_at IS NULL "
        "ORDER BY t.rank, c.updated_at DESC, c.id DESC LIMIT ?"
    )

    def search_titles(self, match: str, limit: int) -> list[ChatSummary]:
        """Best title match first (bm25), newest first among equals; archived chats too."""
        engine_match = self._title_query(match)
        if engine_match is None:
            return []
        rows = self.search_db.query(self.SEARCH_TITLES, (*self._key, engine_match, limit))
        return [summary_from_row(row) for row in rows]

    SELECT_LIVE_NUMS = (
        "SELECT num, id, generation FROM chats WHERE deleted_at IS NULL "
        "AND temporary_expires_at IS NULL ORDER BY updated_at DESC, id DESC"
    )

    def live_chats(self) -> list[tuple[int, str, int]]:
        """``(num, id, generation)`` of every live chat, newest first (for fan-out)."""
        return [(r[0], r[1], r[2]) for r in self.db.query(self.SELECT_LIVE_NUMS, self._key)]

    SELECT_UNPURGED = "SELECT num, id, generation FROM chats WHERE purged_at IS NULL"

    def unpurged_chats(self) -> list[tuple[int, str, int]]:
        """``(num, id, generation)`` of every chat whose files may exist (index repair)."""
        return [(r[0], r[1], r[2]) for r in self.db.query(self.SELECT_UNPURGED, self._key)]

    SELECT_DUE = (
        f"SELECT {RECORD_COLUMNS} FROM chats c "
        "WHERE c.deleted_at IS NOT NULL AND c.purged_at IS NULL AND c.deleted_at <= ? "
        "ORDER BY c.deleted_at LIMIT ?"
    )

    def due_for_purge(self, cutoff_ms: int, limit: int) -> list[ChatRecord]:
        rows = self.db.query(self.SELECT_DUE, (*self._key, cutoff_ms, limit))
        return [record_from_row(r) for r in rows]

    SELECT_UNTOUCHED = (
        f"SELECT {RECORD_COLUMNS} FROM chats c "
        "WHERE c.deleted_at IS NULL AND c.archived_at IS NULL AND c.updated_at < ? "
        "AND c.temporary_expires_at IS NULL AND coalesce(c.unarchived_at, 0) < ? "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )

    def untouched_since(self, cutoff_ms: int, limit: int) -> list[ChatRecord]:
        """Listed (live, unarchived) chats neither updated nor unarchived since ``cutoff_ms``."""
        params = (*self._key, cutoff_ms, cutoff_ms, limit)
        return [record_from_row(r) for r in self.db.query(self.SELECT_UNTOUCHED, params)]

    WATERMARKS = (
        "SELECT (SELECT coalesce(max(num), 0) FROM chats), "
        "(SELECT coalesce(max(updated_at), 0) FROM chats WHERE deleted_at IS NULL), "
        "(SELECT coalesce(max(deleted_at), 0) FROM chats "
        "WHERE deleted_at IS NOT NULL AND purged_at IS NULL)"
    )
    CREATED_AFTER = f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.num > ? ORDER BY c.num LIMIT ?"
    UPDATED_AFTER = (
        f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.deleted_at IS NULL AND c.updated_at > ? "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    DELETED_AFTER = (
        f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.deleted_at IS NOT NULL "
        "AND c.purged_at IS NULL AND c.deleted_at > ? ORDER BY c.deleted_at LIMIT ?"
    )

    def watermarks(self) -> tuple[int, int, int]:
        """``(max num, newest live updated_at, newest deleted_at)``: where a watcher stands."""
        row = self.db.query_one(self.WATERMARKS, self._key)
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2])

    def changed_after(
        self, marks: tuple[int, int, int], limit: int
    ) -> tuple[list[ChatRecord], list[ChatRecord], list[ChatRecord]]:
        """Rows created, updated and deleted past ``marks`` (each list at most ``limit``)."""
        num, updated_at, deleted_at = marks
        key = self._key
        return (
            [record_from_row(r) for r in self.db.query(self.CREATED_AFTER, (*key, num, limit))],
            [
                record_from_row(r)
                for r in self.db.query(self.UPDATED_AFTER, (*key, updated_at, limit))
            ],
            [
                record_from_row(r)
                for r in self.db.query(self.DELETED_AFTER, (*key, deleted_at, limit))
            ],
        )

    # ── writes (inside the caller's transaction) ────────────────────

    INSERT = (
        "INSERT INTO chats (id, title, created_at, updated_at, generation) "
        "VALUES (?, ?, ?, ?, 1) RETURNING num"
    )

    def insert(self, chat_id: str, title: str, now_ms: int) -> ChatRecord:
        row = self.db.query_one(self.INSERT, (*self._key, chat_id, title, now_ms, now_ms))
        assert row is not None
        self._insert_title(row[0], title)
        return ChatRecord(row[0], chat_id, title, now_ms, now_ms, None, 1, None, None, None, None)

    RECREATE = (
        "UPDATE chats SET title = ?, created_at = ?, updated_at = ?, "
        "last_message_preview = NULL, generation = generation + 1, deleted_at = NULL, "
        "purged_at = NULL, archived_at = NULL, unarchived_at = NULL, pinned_at = NULL, "
        "temporary_expires_at = NULL, temporary_held_until = NULL WHERE num = ?"
    )

    def recreate(self, old: ChatRecord, title: str, now_ms: int) -> ChatRecord:
        """Start a new generation of ``old.id`` (the caller purged the old one's files)."""
        self.db.execute(self.RECREATE, (*self._key, title, now_ms, now_ms, old.num))
        self._set_title_index(old.num, title)
        return ChatRecord(
            old.num, old.id, title, now_ms, now_ms, None, old.generation + 1, None, None, None, None
        )

    _INSERT_TITLE = "INSERT INTO chat_titles (rowid, title) VALUES (?, ?)"
    _UPDATE_TITLE = "UPDATE chat_titles SET title = ? WHERE rowid = ?"

    def _insert_title(self, num: int, title: str) -> None:
        self.db.execute(self._INSERT_TITLE, (num, title))

    def _set_title_index(self, num: int, title: str) -> None:
        if self.db.execute(self._UPDATE_TITLE, (title, num)).rowcount == 0:
            self._insert_title(num, title)

    RENAME = "UPDATE chats SET title = ? WHERE num = ?"

    def rename(self, record: ChatRecord, title: str) -> ChatRecord:
        self.db.execute(self.RENAME, (*self._key, title, record.num))
        self._set_title_index(record.num, title)
        return replace(record, title=title)

    BACKDATE = (
        "UPDATE chats SET created_at = ?, updated_at = ?, last_message_preview = ? WHERE num = ?"
    )

    def backdate(
        self, record: ChatRecord, created_at: int, updated_at: int, preview: str | None
    ) -> ChatRecord:
        """Give an imported chat its source's times and preview (lists sort by them)."""
        params = (*self._key, created_at, updated_at, preview, record.num)
        self.db.execute(self.BACKDATE, params)
        return replace(
            record, created_at=created_at, updated_at=updated_at, last_message_preview=preview
        )

    SOFT_DELETE = "UPDATE chats SET deleted_at = ? WHERE num = ? AND deleted_at IS NULL"

    def soft_delete(self, record: ChatRecord, now_ms: int) -> bool:
        return self.db.execute(self.SOFT_DELETE, (*self._key, now_ms, record.num)).rowcount == 1

    RESTORE = "UPDATE chats SET deleted_at = NULL WHERE num = ? AND purged_at IS NULL"

    def restore(self, record: ChatRecord) -> ChatRecord:
        self.db.execute(self.RESTORE, (*self._key, record.num))
        return replace(record, deleted_at=None)

    ARCHIVE = "UPDATE chats SET archived_at = ? WHERE num = ? AND archived_at IS NULL"
    UNARCHIVE = (
        "UPDATE chats SET archived_at = NULL, unarchived_at = ? "
        "WHERE num = ? AND archived_at IS NOT NULL"
    )

    def archive(self, record: ChatRecord, now_ms: int) -> ChatRecord | None:
        """Archive ``record``; ``None`` if it already was (nothing written)."""
        if self.db.execute(self.ARCHIVE, (*self._key, now_ms, record.num)).rowcount == 0:
            return None
        return replace(record, archived_at=now_ms)

    def unarchive(self, record: ChatRecord, now_ms: int) -> ChatRecord | None:
        """Take ``record`` out of the archive; ``None`` if it was not archived."""
        if self.db.execute(self.UNARCHIVE, (*self._key, now_ms, record.num)).rowcount == 0:
            return None
        return replace(record, archived_at=None, unarchived_at=now_ms)

    RECORD_TURN = "UPDATE chats SET updated_at = ?, last_message_preview = ? WHERE num = ?"

    def record_turn(self, record: ChatRecord, preview: str, now_ms: int) -> ChatRecord:
        self.db.execute(self.RECORD_TURN, (*self._key, now_ms, preview, record.num))
        return replace(record, updated_at=now_ms, last_message_preview=preview)

    MARK_PURGED = (
        "UPDATE chats SET purged_at = ? WHERE num = ? AND generation = ? "
        "AND deleted_at IS NOT NULL AND purged_at IS NULL"
    )
    DELETE_TITLE = "DELETE FROM chat_titles WHERE rowid = ?"

    def mark_purged(self, record: ChatRecord, now_ms: int) -> bool:
        """Tombstone a still-deleted generation; False if it was restored or purged."""
        params = (*self._key, now_ms, record.num, record.generation)
        if self.db.execute(self.MARK_PURGED, params).rowcount:
            self.db.execute(self.DELETE_TITLE, (*self._key, record.num))
            return True
        return False
