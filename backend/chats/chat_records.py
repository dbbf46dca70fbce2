"""The chat index: one row per chat id, title search, the soft-delete lifecycle. SQL only.

Tables (migration component ``chats.directory``, its first name, kept: it is stored in each file)::

    directory_meta(key PK, value)   WITHOUT ROWID   per-directory secrets (the id key)
    chats(num INTEGER PK, id UNIQUE, title, created_at, updated_at, last_message_preview,
          generation, deleted_at, purged_at, archived_at, unarchived_at)
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

from dataclasses import dataclass, replace
from typing import Any

from backend.chats.ids import new_id_key
from backend.chats.values import ChatCursor, ChatSummary
from backend.storage import Database

COMPONENT = "chats.directory"
ID_KEY = "id_key"


def _m001_directory_meta(db: Database) -> None:
    db.execute(
        "CREATE TABLE directory_meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID"
    )
    db.execute("INSERT INTO directory_meta (key, value) VALUES (?, ?)", (ID_KEY, new_id_key()))


def _m002_chats(db: Database) -> None:
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


def _m003_archive(db: Database) -> None:
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


MIGRATIONS = (_m001_directory_meta, _m002_chats, _m003_archive)


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

    @property
    def live(self) -> bool:
        return self.deleted_at is None

    def summary(self) -> ChatSummary:
        return ChatSummary(
            id=self.id,
            title=self.title,
            created_at=self.created_at,
            updated_at=self.updated_at,
            last_message_preview=self.last_message_preview,
            archived_at=self.archived_at,
        )


_COLUMNS = (
    "c.num, c.id, c.title, c.created_at, c.updated_at, c.last_message_preview, "
    "c.generation, c.deleted_at, c.purged_at, c.archived_at, c.unarchived_at"
)
_SUMMARY_COLUMNS = (
    "c.id, c.title, c.created_at, c.updated_at, c.last_message_preview, c.archived_at"
)


def _record(row: Any) -> ChatRecord:
    return ChatRecord(*row)


def _summary(row: Any) -> ChatSummary:
    return ChatSummary(
        id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        last_message_preview=row["last_message_preview"],
        archived_at=row["archived_at"],
    )


class ChatRecordStore:
    """SQL for the ``chats`` table and its title index, on the directory's Database."""

    def __init__(self, db: Database, search_db: Database | None = None) -> None:
        self.db = db
        self.search_db = search_db or db
        """Title searches read here: a connection of their own never holds up the writers."""
        db.migrate(COMPONENT, MIGRATIONS)

    # ── meta ────────────────────────────────────────────────────────

    _SELECT_META = "SELECT value FROM directory_meta WHERE key = ?"

    def id_key(self) -> bytes:
        row = self.db.query_one(self._SELECT_META, (ID_KEY,))
        assert row is not None, "migration _m001_directory_meta stores the id key"
        return bytes(row["value"])

    _PUT_META = (
        "INSERT INTO directory_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    )
    _DROP_META = "DELETE FROM directory_meta WHERE key = ?"

    def load_setting(self, key: str) -> str | None:
        """A per-directory setting (the user's), stored as text; ``None`` when unset."""
        row = self.db.query_one(self._SELECT_META, (key,))
        return None if row is None else bytes(row["value"]).decode()

    def put_setting(self, key: str, value: str | None) -> None:
        if value is None:
            self.db.execute(self._DROP_META, (key,))
        else:
            self.db.execute(self._PUT_META, (key, value.encode()))

    # ── reads ───────────────────────────────────────────────────────

    _SELECT_BY_ID = f"SELECT {_COLUMNS} FROM chats c WHERE c.id = ?"
    _SELECT_BY_NUM = f"SELECT {_COLUMNS} FROM chats c WHERE c.num = ?"

    def load(self, chat_id: str) -> ChatRecord | None:
        """The row for ``chat_id`` in any state (live, soft-deleted, purged)."""
        row = self.db.query_one(self._SELECT_BY_ID, (chat_id,))
        return _record(row) if row else None

    def load_num(self, num: int) -> ChatRecord | None:
        row = self.db.query_one(self._SELECT_BY_NUM, (num,))
        return _record(row) if row else None

    _LIST_LIVE = (
        f"SELECT {_SUMMARY_COLUMNS} "
        "FROM chats c WHERE c.deleted_at IS NULL AND c.archived_at {archived} {cursor} "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    _LIST_LIVE_MATCHING = (
        f"SELECT {_SUMMARY_COLUMNS} "
        "FROM chat_titles t JOIN chats c ON c.num = t.rowid "
        "WHERE chat_titles MATCH ? AND c.deleted_at IS NULL AND c.archived_at {archived} "
        "{cursor} ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
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
        params: list[Any] = []
        cursor = ""
        if isinstance(before, ChatCursor):
            cursor = self._BEFORE_CURSOR
            params += [before.updated_at, before.id]
        elif before is not None:
            cursor = self._BEFORE_TIME
            params.append(before)
        which = self._ARCHIVED if archived else self._NOT_ARCHIVED
        if match is None:
            sql = self._LIST_LIVE.format(archived=which, cursor=cursor)
        else:
            sql = self._LIST_LIVE_MATCHING.format(archived=which, cursor=cursor)
            params.insert(0, match)
        params.append(limit)
        db = self.db if match is None else self.search_db
        return [_summary(row) for row in db.query(sql, params)]

    _SEARCH_TITLES = (
        f"SELECT {_SUMMARY_COLUMNS} "
        "FROM chat_titles t JOIN chats c ON c.num = t.rowid "
        "WHERE chat_titles MATCH ? AND c.deleted_at IS NULL "
        "ORDER BY t.rank, c.updated_at DESC, c.id DESC LIMIT ?"
    )

    def search_titles(self, match: str, limit: int) -> list[ChatSummary]:
        """Best title match first (bm25), newest first among equals; archived chats too."""
        rows = self.search_db.query(self._SEARCH_TITLES, (match, limit))
        return [_summary(row) for row in rows]

    _SELECT_LIVE_NUMS = (
        "SELECT num, id, generation FROM chats WHERE deleted_at IS NULL "
        "ORDER BY updated_at DESC, id DESC"
    )

    def live_chats(self) -> list[tuple[int, str, int]]:
        """``(num, id, generation)`` of every live chat, newest first (for fan-out)."""
        return [(r[0], r[1], r[2]) for r in self.db.query(self._SELECT_LIVE_NUMS)]

    _SELECT_UNPURGED = "SELECT num, id, generation FROM chats WHERE purged_at IS NULL"

    def unpurged_chats(self) -> list[tuple[int, str, int]]:
        """``(num, id, generation)`` of every chat whose files may exist (index repair)."""
        return [(r[0], r[1], r[2]) for r in self.db.query(self._SELECT_UNPURGED)]

    _SELECT_DUE = (
        f"SELECT {_COLUMNS} FROM chats c "
        "WHERE c.deleted_at IS NOT NULL AND c.purged_at IS NULL AND c.deleted_at <= ? "
        "ORDER BY c.deleted_at LIMIT ?"
    )

    def due_for_purge(self, cutoff_ms: int, limit: int) -> list[ChatRecord]:
        return [_record(r) for r in self.db.query(self._SELECT_DUE, (cutoff_ms, limit))]

    _SELECT_UNTOUCHED = (
        f"SELECT {_COLUMNS} FROM chats c "
        "WHERE c.deleted_at IS NULL AND c.archived_at IS NULL AND c.updated_at < ? "
        "AND coalesce(c.unarchived_at, 0) < ? ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )

    def untouched_since(self, cutoff_ms: int, limit: int) -> list[ChatRecord]:
        """Listed (live, unarchived) chats neither updated nor unarchived since ``cutoff_ms``."""
        params = (cutoff_ms, cutoff_ms, limit)
        return [_record(r) for r in self.db.query(self._SELECT_UNTOUCHED, params)]

    _WATERMARKS = (
        "SELECT (SELECT coalesce(max(num), 0) FROM chats), "
        "(SELECT coalesce(max(updated_at), 0) FROM chats WHERE deleted_at IS NULL), "
        "(SELECT coalesce(max(deleted_at), 0) FROM chats "
        "WHERE deleted_at IS NOT NULL AND purged_at IS NULL)"
    )
    _CREATED_AFTER = f"SELECT {_COLUMNS} FROM chats c WHERE c.num > ? ORDER BY c.num LIMIT ?"
    _UPDATED_AFTER = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.deleted_at IS NULL AND c.updated_at > ? "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT ?"
    )
    _DELETED_AFTER = (
        f"SELECT {_COLUMNS} FROM chats c WHERE c.deleted_at IS NOT NULL "
        "AND c.purged_at IS NULL AND c.deleted_at > ? ORDER BY c.deleted_at LIMIT ?"
    )

    def watermarks(self) -> tuple[int, int, int]:
        """``(max num, newest live updated_at, newest deleted_at)``: where a watcher stands."""
        row = self.db.query_one(self._WATERMARKS)
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2])

    def changed_after(
        self, marks: tuple[int, int, int], limit: int
    ) -> tuple[list[ChatRecord], list[ChatRecord], list[ChatRecord]]:
        """Rows created, updated and deleted past ``marks`` (each list at most ``limit``)."""
        num, updated_at, deleted_at = marks
        return (
            [_record(r) for r in self.db.query(self._CREATED_AFTER, (num, limit))],
            [_record(r) for r in self.db.query(self._UPDATED_AFTER, (updated_at, limit))],
            [_record(r) for r in self.db.query(self._DELETED_AFTER, (deleted_at, limit))],
        )

    # ── writes (inside the caller's transaction) ────────────────────

    _INSERT = (
        "INSERT INTO chats (id, title, created_at, updated_at, generation) "
        "VALUES (?, ?, ?, ?, 1) RETURNING num"
    )
    _INSERT_TITLE = "INSERT INTO chat_titles (rowid, title) VALUES (?, ?)"

    def insert(self, chat_id: str, title: str, now_ms: int) -> ChatRecord:
        row = self.db.query_one(self._INSERT, (chat_id, title, now_ms, now_ms))
        assert row is not None
        self.db.execute(self._INSERT_TITLE, (row[0], title))
        return ChatRecord(row[0], chat_id, title, now_ms, now_ms, None, 1, None, None, None, None)

    _RECREATE = (
        "UPDATE chats SET title = ?, created_at = ?, updated_at = ?, "
        "last_message_preview = NULL, generation = generation + 1, deleted_at = NULL, "
        "purged_at = NULL, archived_at = NULL, unarchived_at = NULL WHERE num = ?"
    )
    _UPDATE_TITLE = "UPDATE chat_titles SET title = ? WHERE rowid = ?"

    def recreate(self, old: ChatRecord, title: str, now_ms: int) -> ChatRecord:
        """Start a new generation of ``old.id`` (the caller purged the old one's files)."""
        self.db.execute(self._RECREATE, (title, now_ms, now_ms, old.num))
        self._set_title_index(old.num, title)
        return ChatRecord(
            old.num, old.id, title, now_ms, now_ms, None, old.generation + 1, None, None, None, None
        )

    def _set_title_index(self, num: int, title: str) -> None:
        if self.db.execute(self._UPDATE_TITLE, (title, num)).rowcount == 0:
            self.db.execute(self._INSERT_TITLE, (num, title))

    _RENAME = "UPDATE chats SET title = ? WHERE num = ?"

    def rename(self, record: ChatRecord, title: str) -> ChatRecord:
        self.db.execute(self._RENAME, (title, record.num))
        self._set_title_index(record.num, title)
        return replace(record, title=title)

    _BACKDATE = (
        "UPDATE chats SET created_at = ?, updated_at = ?, last_message_preview = ? WHERE num = ?"
    )

    def backdate(
        self, record: ChatRecord, created_at: int, updated_at: int, preview: str | None
    ) -> ChatRecord:
        """Give an imported chat its source's times and preview (lists sort by them)."""
        self.db.execute(self._BACKDATE, (created_at, updated_at, preview, record.num))
        return replace(
            record, created_at=created_at, updated_at=updated_at, last_message_preview=preview
        )

    _SOFT_DELETE = "UPDATE chats SET deleted_at = ? WHERE num = ? AND deleted_at IS NULL"

    def soft_delete(self, record: ChatRecord, now_ms: int) -> bool:
        return self.db.execute(self._SOFT_DELETE, (now_ms, record.num)).rowcount == 1

    _RESTORE = "UPDATE chats SET deleted_at = NULL WHERE num = ? AND purged_at IS NULL"

    def restore(self, record: ChatRecord) -> ChatRecord:
        self.db.execute(self._RESTORE, (record.num,))
        return replace(record, deleted_at=None)

    _ARCHIVE = "UPDATE chats SET archived_at = ? WHERE num = ? AND archived_at IS NULL"
    _UNARCHIVE = (
        "UPDATE chats SET archived_at = NULL, unarchived_at = ? "
        "WHERE num = ? AND archived_at IS NOT NULL"
    )

    def archive(self, record: ChatRecord, now_ms: int) -> ChatRecord | None:
        """Archive ``record``; ``None`` if it already was (nothing written)."""
        if self.db.execute(self._ARCHIVE, (now_ms, record.num)).rowcount == 0:
            return None
        return replace(record, archived_at=now_ms)

    def unarchive(self, record: ChatRecord, now_ms: int) -> ChatRecord | None:
        """Take ``record`` out of the archive; ``None`` if it was not archived."""
        if self.db.execute(self._UNARCHIVE, (now_ms, record.num)).rowcount == 0:
            return None
        return replace(record, archived_at=None, unarchived_at=now_ms)

    _RECORD_TURN = "UPDATE chats SET updated_at = ?, last_message_preview = ? WHERE num = ?"

    def record_turn(self, record: ChatRecord, preview: str, now_ms: int) -> ChatRecord:
        self.db.execute(self._RECORD_TURN, (now_ms, preview, record.num))
        return replace(record, updated_at=now_ms, last_message_preview=preview)

    _MARK_PURGED = (
        "UPDATE chats SET purged_at = ? WHERE num = ? AND generation = ? "
        "AND deleted_at IS NOT NULL AND purged_at IS NULL"
    )
    _DELETE_TITLE = "DELETE FROM chat_titles WHERE rowid = ?"

    def mark_purged(self, record: ChatRecord, now_ms: int) -> bool:
        """Tombstone a still-deleted generation; False if it was restored or purged."""
        if self.db.execute(self._MARK_PURGED, (now_ms, record.num, record.generation)).rowcount:
            self.db.execute(self._DELETE_TITLE, (record.num,))
            return True
        return False
