"""SessionStore: every SQL statement of the conversation store, and the state derived from it.

Tables, primary key first. All are ``WITHOUT ROWID`` with a composite primary key and no
secondary index, so one logical write is one row write; the FTS table is virtual and exists
only once something searched:

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

* ``seq`` orders rows of a session; a child is inserted after its parent (only an import may
  name a parent that comes later), so the max-seq row is the **active leaf**. The tail
  ``{leaf_id, next_seq}`` is read once and then maintained in place; the token estimate of
  the active path is memoised per leaf. Both are caches of the file: they are dropped when a
  write's transaction rolls back (the handle catches the failure of a transaction it opened;
  a caller's transaction gets a ``Database.on_rollback`` hook) and when another connection
  committed (``PRAGMA data_version`` moved), so a foreign process writing the same file can
  never make this one reuse a ``seq`` or miss a leaf. A write inside a transaction the caller
  owns re-checks them against the file (the caller may roll back to a savepoint, which runs
  no hook): see ``begin_write``.
* Every method that writes must run inside ``database.transaction()``; every method that reads
  caches must run under ``database.lock``. The handle guarantees both.
* ``content_hash`` is the raw 32-byte sha256 of the stored JSON (a BLOB, not 64 hex
  characters: on a small text row the hex form measurably slowed every append). It is what an
  update compares to detect a no-op; a row without one (NULL) is compared by full content.
* **A retired file refuses writes.** Purging a chat (or replacing its generation) deletes its
  file, but a connection another process still holds would keep writing to the unlinked
  inode: acknowledged, then lost. So whoever removes a file first marks it retired
  (``PRAGMA user_version =`` :data:`RETIRED_FILE_MARK`, one commit). That commit moves
  ``data_version`` for every other connection; ``begin_write`` already reads it, so only
  then does it read the mark, and from then on every write of that store raises. The check
  costs nothing on the write path unless another connection committed.
* SQL text is constant; values are always bound. Id lists travel as one JSON array bound to
  ``json_each(?)``, so no statement is assembled from data.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from backend.errors import NotFoundError
from backend.sessions.attachments import Payload, find_pointers, resolve_attachments
from backend.sessions.chunking import MAX_INLINE_ROW_BYTES
from backend.sessions.encoding import EncodedMessage, decode_content
from backend.sessions.overlays import COMPACTION_PREFIX, plan_overlays
from backend.sessions.records import OMITTED, SearchResult, StoredCompaction, _Omitted
from backend.sessions.search import FTS_TOKENIZER, fts_rowid, indexed_text
from backend.sessions.tokens import estimate_string_tokens
from backend.storage import Database

MAX_PATH_DEPTH = 10_000
"""A path walk stops ``MAX_PATH_DEPTH`` parents above the leaf: at most 10,001 rows per read."""

MIGRATION_COMPONENT = "sessions"
RETIRED_FILE_MARK = 0x52455449  # "RETI": the user_version of a file about to be deleted
_READ_MARK = "PRAGMA user_version"
_MARK_RETIRED = f"PRAGMA user_version = {RETIRED_FILE_MARK}"
_FTS_BACKFILL_BATCH_ROWS = 500


# ── schema ──────────────────────────────────────────────────────────────


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


def m001_create_session_tables(db: Database) -> None:
    """The conversation store's tables (schema version 1)."""
    for statement in _CREATE_TABLES:
        db.execute(statement)


MIGRATIONS = (m001_create_session_tables,)
"""Append-only. A new schema version is a new function at the end, never an edit."""

SCHEMA_VERSION = len(MIGRATIONS)


def has_session_tables(database: Database) -> bool:
    """Whether ``database`` holds a conversation store (without creating one)."""
    return database.table_exists("session_messages")


def mark_retired(database: Database) -> None:
    """Mark the file retired: every store on it refuses writes from its next one on.

    One commit (it waits for a write in progress, so that write lands before the mark).
    """
    database.execute(_MARK_RETIRED)


def is_marked_retired(database: Database) -> bool:
    row = database.query_one(_READ_MARK)
    return row is not None and row[0] == RETIRED_FILE_MARK


# ── derived state ───────────────────────────────────────────────────────


@dataclass(slots=True)
class _Tail:
    leaf_id: str | None
    next_seq: int


@dataclass(slots=True)
class _TokenMemo:
    """Token estimate of the path ending at ``leaf_id``; ``counted`` rows contribute."""

    leaf_id: str | None
    counted: set[str]
    total: float
    walked: int


@dataclass(frozen=True, slots=True)
class PathRow:
    """One row of a path, measured without its content."""

    id: str
    parent_id: str | None
    role: str
    bytes: int
    token_estimate: int
    created_at: int
    chunks: int


@dataclass(frozen=True, slots=True)
class BranchPath:
    """A root-to-leaf path: visible rows (hidden overlay echoes removed), how many rows the walk
    took (hidden ones included) and whether it stopped at the cap with older rows left."""

    rows: list[PathRow] = field(default_factory=list)
    walked: int = 0
    capped: bool = False


@dataclass(frozen=True, slots=True)
class StoredRow:
    """What an update needs to know about the row it replaces."""

    digest: bytes | None
    chunks: int
    token_estimate: int
    parent_id: str | None


class _NotInserted(enum.Enum):
    NOT_INSERTED = "NOT_INSERTED"


NOT_INSERTED: Final = _NotInserted.NOT_INSERTED


# ── statements ──────────────────────────────────────────────────────────

_FTS_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_fts'"


class SessionStore:
    """The storage engine under every ``Session`` handle of one file."""

    def __init__(
        self, database: Database, retired_error: Callable[[], Exception] | None = None
    ) -> None:
        self.db = database
        database.migrate(MIGRATION_COMPONENT, MIGRATIONS)
        self.retired = is_marked_retired(database)
        """Sticky: once the file is known to be retired, every write raises ``retired_error``."""
        self.retired_error = retired_error or partial(
            NotFoundError, "conversation file", str(database.path)
        )
        self._tails: dict[str, _Tail] = {}
        self._memos: dict[str, _TokenMemo] = {}
        self._compactions: dict[str, list[StoredCompaction]] = {}
        self._fts = database.query_one(_FTS_EXISTS) is not None
        self._fts_unconfirmed = False
        self._data_version = self._read_data_version()
        # Sessions written inside a transaction the caller owns, and those of them whose rows
        # were deleted or cleared there (see ``begin_write``).
        self._unsettled: set[str] = set()
        self._restructured: set[str] = set()
        self._settle_armed = False
        self._forgetters: dict[str, Callable[[], None]] = {}

    # ── cache coherence ─────────────────────────────────────────────

    def _read_data_version(self) -> int:
        # A pragma reads no table rows; it is still a counted statement of the choke point.
        return self.db.data_version()

    def refresh(self, session_id: str | None = None) -> None:
        """Before a read: catch up with foreign commits and with caller savepoint rollbacks."""
        version = self._read_data_version()
        if version != self._data_version:
            self._after_foreign_commit(version)
        if session_id is not None and session_id in self._unsettled:
            self._verify(session_id)

    def _after_foreign_commit(self, version: int) -> None:
        self._data_version = version
        if not self.retired and is_marked_retired(self.db):
            self.retired = True
        self._tails.clear()
        self._memos.clear()
        self._compactions.clear()
        if not self._fts:
            self._fts = self.db.query_one(_FTS_EXISTS) is not None

    def forget(self, session_id: str) -> None:
        """Drop the derived state of one session (its writes were rolled back)."""
        self._tails.pop(session_id, None)
        self._memos.pop(session_id, None)
        self._compactions.pop(session_id, None)

    def begin_write(self, session_id: str, nested: bool) -> None:
        """First step of every write, inside its transaction.

        Catches up with foreign commits (inside BEGIN IMMEDIATE no other connection can commit
        until this transaction ends). ``nested`` says the caller
        owns the enclosing transaction: it may roll back to a savepoint of its own, which runs
        no hook, so the cached state of a session written in such a transaction is checked
        against the file before it is used again, and once more after the commit.
        """
        version = self.db.data_version()
        if version != self._data_version:
            self._after_foreign_commit(version)
            if self.retired:
                raise self.retired_error()
        if nested:
            # The caller may roll back after this write returned: hook its rollback. (A
            # transaction the handle opened itself reports failure by raising through it.)
            self._enter_caller_transaction(session_id)
            forget = self._forgetters.get(session_id)
            if forget is None:
                forget = self._forgetters[session_id] = partial(self.forget, session_id)
            self.db.on_rollback(forget)

    def _enter_caller_transaction(self, session_id: str) -> None:
        if session_id in self._unsettled:
            self._verify(session_id)
        else:
            self._unsettled.add(session_id)
        if not self._settle_armed:
            self._settle_armed = True
            self.db.after_commit(self._settle)
            self.db.on_rollback(self._unsettle_after_rollback)

    _SELECT_LEAF_SEQ = "SELECT seq FROM session_messages WHERE session_id = ? AND id = ?"
    _SELECT_ANY_ROW = "SELECT 1 FROM session_messages WHERE session_id = ? LIMIT 1"

    def _verify(self, session_id: str) -> None:
        """Keep only the cached state of a session that the file still agrees with.

        The tail is maintained in place by inserts, so it is right exactly when its leaf row
        is still there with the seq it was given (one point read); a tail derived after a
        delete or clear in this transaction cannot be checked that way and is re-derived.
        """
        self._memos.pop(session_id, None)
        self._compactions.pop(session_id, None)
        if self._fts_unconfirmed:
            self._fts = self.db.query_one(_FTS_EXISTS) is not None
        tail = self._tails.get(session_id)
        if tail is None:
            return
        if session_id in self._restructured:
            del self._tails[session_id]
            return
        if tail.leaf_id is None:
            intact = self.db.query_one(self._SELECT_ANY_ROW, (session_id,)) is None
        else:
            row = self.db.query_one(self._SELECT_LEAF_SEQ, (session_id, tail.leaf_id))
            intact = row is not None and row["seq"] == tail.next_seq - 1
        if not intact:
            del self._tails[session_id]

    def _settle(self) -> None:
        """After the caller's transaction committed: re-check what was written inside it."""
        with self.db.lock:
            for session_id in self._unsettled:
                self._verify(session_id)
            self._unsettled.clear()
            self._restructured.clear()
            self._settle_armed = False

    def _unsettle_after_rollback(self) -> None:
        for session_id in self._unsettled:
            self.forget(session_id)
        self._unsettled.clear()
        self._restructured.clear()
        self._settle_armed = False

    # ── tail ────────────────────────────────────────────────────────

    _SELECT_TAIL = (
        "SELECT id, seq FROM session_messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1"
    )

    def _tail(self, session_id: str) -> _Tail:
        tail = self._tails.get(session_id)
        if tail is None:
            row = self.db.query_one(self._SELECT_TAIL, (session_id,))
            tail = _Tail(row["id"], row["seq"] + 1) if row else _Tail(None, 1)
            self._tails[session_id] = tail
        return tail

    def leaf_id(self, session_id: str) -> str | None:
        """The active leaf: the most recently inserted row of the session."""
        return (self._tails.get(session_id) or self._tail(session_id)).leaf_id

    # ── point reads ─────────────────────────────────────────────────

    _SELECT_EXISTS = "SELECT 1 FROM session_messages WHERE session_id = ? AND id = ?"

    def exists(self, session_id: str, message_id: str) -> bool:
        return self.db.query_one(self._SELECT_EXISTS, (session_id, message_id)) is not None

    _SELECT_STORED = (
        "SELECT content_hash, content_chunks, token_estimate, parent_id"
        " FROM session_messages WHERE session_id = ? AND id = ?"
    )

    def stored_row(self, session_id: str, message_id: str) -> StoredRow | None:
        row = self.db.query_one(self._SELECT_STORED, (session_id, message_id))
        if row is None:
            return None
        return StoredRow(
            row["content_hash"], row["content_chunks"], row["token_estimate"], row["parent_id"]
        )

    _SELECT_ROW = (
        "SELECT id, parent_id, content, content_chunks FROM session_messages"
        " WHERE session_id = ? AND id = ?"
    )

    def load_message(self, session_id: str, message_id: str) -> dict | None:
        """One message, reassembled and with its attachments inlined; None if absent."""
        found = self.load_row(session_id, message_id)
        return None if found is None else found[0]

    def load_row(self, session_id: str, message_id: str) -> tuple[dict | None, str | None] | None:
        """``(message, parent_id)`` of one row (message None if unreadable); None if absent."""
        row = self.db.query_one(self._SELECT_ROW, (session_id, message_id))
        if row is None:
            return None
        content = row["content"]
        if row["content_chunks"]:
            content += "".join(self._continuations(session_id, [message_id]).get(message_id, ()))
        return self.decode(content), row["parent_id"]

    _SELECT_CONTENTS = (
        "SELECT id, content, content_chunks FROM session_messages"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )

    _SELECT_ALL_CONTENTS = (
        "SELECT id, content, content_chunks FROM session_messages WHERE session_id = ?"
    )

    def load_contents(self, session_id: str, message_ids: Sequence[str] | None) -> dict[str, str]:
        """Full stored JSON of each id (continuations joined); absent ids are missing.

        ``None`` loads every row of the session.
        """
        if message_ids is None:
            rows = self.db.query(self._SELECT_ALL_CONTENTS, (session_id,))
        else:
            ids = json.dumps(list(message_ids))
            rows = self.db.query(self._SELECT_CONTENTS, (session_id, ids))
        chunked = [row["id"] for row in rows if row["content_chunks"]]
        continuations = self._continuations(session_id, chunked) if chunked else {}
        contents: dict[str, str] = {}
        for row in rows:
            content = row["content"]
            if row["content_chunks"]:
                content += "".join(continuations.get(row["id"], ()))
            contents[row["id"]] = content
        return contents

    _SELECT_CONTINUATIONS = (
        "SELECT id, content FROM session_message_chunks"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id, idx"
    )

    def _continuations(self, session_id: str, message_ids: Sequence[str]) -> dict[str, list[str]]:
        slices: dict[str, list[str]] = {}
        for row in self.db.query(
            self._SELECT_CONTINUATIONS, (session_id, json.dumps(list(message_ids)))
        ):
            slices.setdefault(row["id"], []).append(row["content"])
        return slices

    def searchable_texts(
        self, session_id: str, message_ids: Sequence[str] | None
    ) -> dict[str, str]:
        """``{id: text}`` of the rows ``search`` can find among ``message_ids`` (all if None).

        The rule of the FTS index: the row exists, is not a hidden overlay echo, and has
        non-empty indexed text. Attachments are not resolved (they are never indexed).
        """
        hidden = self.hidden_ids(session_id)
        found: dict[str, str] = {}
        for message_id, content in self.load_contents(session_id, message_ids).items():
            if message_id in hidden:
                continue
            message = decode_content(content)
            text = indexed_text(message) if message is not None else ""
            if text:
                found[message_id] = text
        return found

    def decode(self, content: str) -> dict | None:
        """A stored JSON text as the caller wrote it (attachments inlined); None if unreadable."""
        message = decode_content(content)
        if message is None:
            return None
        return resolve_attachments(message, find_pointers(content), self.load_payloads)

    # ── paths ───────────────────────────────────────────────────────

    # The recursion carries ids only (no content: issue #1710, a CTE dragging content through
    # every level ran SQLite out of memory); sizes are measured once per row at the end.
    _SELECT_PATH = """
        WITH RECURSIVE path(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM session_messages WHERE session_id = :sid AND id = :leaf
            UNION ALL
            SELECT m.id, m.parent_id, path.depth + 1
            FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.parent_id
            WHERE path.depth < :cap
        )
        SELECT path.id, path.parent_id, m.role, m.content_chunks, m.token_estimate, m.created_at,
            length(CAST(m.content AS BLOB))
            + CASE WHEN m.content_chunks > 0 THEN (
                SELECT coalesce(sum(length(CAST(c.content AS BLOB))), 0)
                FROM session_message_chunks AS c WHERE c.session_id = :sid AND c.id = m.id
            ) ELSE 0 END
            + coalesce((
                SELECT sum((a.bytes + 2) / 3 * 4)
                FROM session_attachment_refs AS r
                JOIN session_attachment_meta AS a ON a.hash = r.hash
                WHERE r.session_id = :sid AND r.message_id = m.id
            ), 0) AS bytes
        FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.id
        ORDER BY path.depth DESC
    """

    def path(self, session_id: str, leaf_id: str | None) -> BranchPath:
        """The root-to-leaf path ending at ``leaf_id`` with per-row sizes; empty if unknown."""
        if leaf_id is None:
            return BranchPath()
        rows = self.db.query(
            self._SELECT_PATH, {"sid": session_id, "leaf": leaf_id, "cap": MAX_PATH_DEPTH}
        )
        hidden = self.hidden_ids(session_id)
        visible = [
            PathRow(
                row["id"],
                row["parent_id"],
                row["role"],
                row["bytes"],
                row["token_estimate"],
                row["created_at"],
                row["content_chunks"],
            )
            for row in rows
            if row["id"] not in hidden
        ]
        capped = len(rows) > MAX_PATH_DEPTH and rows[0]["parent_id"] is not None
        return BranchPath(visible, len(rows), capped)

    _SELECT_PATH_IDS = """
        WITH RECURSIVE path(id, parent_id, depth) AS (
            SELECT id, parent_id, 0 FROM session_messages WHERE session_id = :sid AND id = :leaf
            UNION ALL
            SELECT m.id, m.parent_id, path.depth + 1
            FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.parent_id
            WHERE path.depth < :cap
        )
        SELECT id, parent_id, depth FROM path ORDER BY depth DESC
    """

    def path_ids(self, session_id: str, leaf_id: str, cap: int = MAX_PATH_DEPTH) -> list[str]:
        """Ids (hidden ones included) from the root, or from ``cap`` rows up, down to the leaf."""
        rows = self.db.query(
            self._SELECT_PATH_IDS, {"sid": session_id, "leaf": leaf_id, "cap": cap}
        )
        return [row["id"] for row in rows]

    _SELECT_PATH_TOKENS = """
        WITH RECURSIVE path(id, parent_id, token_estimate, depth) AS (
            SELECT id, parent_id, token_estimate, 0
            FROM session_messages WHERE session_id = :sid AND id = :leaf
            UNION ALL
            SELECT m.id, m.parent_id, m.token_estimate, path.depth + 1
            FROM path JOIN session_messages AS m ON m.session_id = :sid AND m.id = path.parent_id
            WHERE path.depth < :cap
        )
        SELECT id, token_estimate FROM path ORDER BY depth DESC
    """

    # ``IS`` rather than ``=``: a ``None`` parent lists the roots (an edited first message).
    _SELECT_CHILDREN = (
        "SELECT id, seq FROM session_messages WHERE session_id = ? AND parent_id IS ? ORDER BY seq"
    )

    def children(self, session_id: str, parent_id: str | None) -> list[tuple[str, int]]:
        """``(id, seq)`` of the children of ``parent_id`` (the roots for None), oldest first."""
        return [
            (row["id"], row["seq"])
            for row in self.db.query(self._SELECT_CHILDREN, (session_id, parent_id))
        ]

    _SELECT_TREE = (
        "SELECT id, parent_id, created_at FROM session_messages WHERE session_id = ? ORDER BY seq"
    )

    def tree_rows(self, session_id: str) -> list[tuple[str, str | None, int]]:
        """``(id, parent_id, created_at)`` of every row, in insertion (``seq``) order."""
        return [(r[0], r[1], r[2]) for r in self.db.query(self._SELECT_TREE, (session_id,))]

    # ── token estimate ──────────────────────────────────────────────

    def token_estimate(self, session_id: str) -> int:
        """Tokens of the active path with overlays applied; memoised per leaf."""
        leaf_id = self.leaf_id(session_id)
        memo = self._memos.get(session_id)
        if memo is None or memo.leaf_id != leaf_id:
            memo = self._derive_memo(session_id, leaf_id)
            self._memos[session_id] = memo
        return max(0, math.ceil(memo.total))

    def _derive_memo(self, session_id: str, leaf_id: str | None) -> _TokenMemo:
        if leaf_id is None:
            return _TokenMemo(None, set(), 0, 0)
        rows = self.db.query(
            self._SELECT_PATH_TOKENS, {"sid": session_id, "leaf": leaf_id, "cap": MAX_PATH_DEPTH}
        )
        hidden = self.hidden_ids(session_id)
        visible = [row for row in rows if row["id"] not in hidden]
        ids = [row["id"] for row in visible]
        spans = plan_overlays(ids, self.compactions(session_id))
        covered: set[int] = set()
        total: float = 0
        for span in spans:
            covered.update(range(span.start, span.end + 1))
            total += estimate_string_tokens(span.compaction.summary)
        counted: set[str] = set()
        for index, row in enumerate(visible):
            if index not in covered:
                counted.add(row["id"])
                total += row["token_estimate"]
        return _TokenMemo(leaf_id, counted, total, len(rows))

    def _memo_after_insert(
        self, session_id: str, message_id: str, parent_id: str | None, estimate: int
    ) -> None:
        memo = self._memos.get(session_id)
        if memo is None:
            return
        extends_memo = (
            memo.leaf_id is not None
            and memo.leaf_id == parent_id
            and memo.walked <= MAX_PATH_DEPTH  # past the cap the oldest row falls off: re-derive
            and not self._named_by_compaction(session_id, message_id)
        )
        if not extends_memo:
            self._memos.pop(session_id, None)
            return
        memo.leaf_id = message_id
        memo.counted.add(message_id)
        memo.total += estimate
        memo.walked += 1

    def _named_by_compaction(self, session_id: str, message_id: str) -> bool:
        return message_id.startswith(COMPACTION_PREFIX) or any(
            message_id in (c.from_message_id, c.to_message_id) for c in self.compactions(session_id)
        )

    # ── message writes ──────────────────────────────────────────────

    _INSERT_MESSAGE = (
        "INSERT OR IGNORE INTO session_messages (session_id, id, seq, parent_id, type, role,"
        " content, content_chunks, token_estimate, created_at, content_hash)"
        " VALUES (?, ?, ?, ?, 'message', ?, ?, ?, ?, ?, ?)"
    )

    def insert(
        self,
        session_id: str,
        encoded: EncodedMessage,
        parent_id: str | _Omitted | None,
        created_at: int,
        *,
        keep_memo: bool = True,
    ) -> str | _NotInserted | None:
        """Insert a new row as the session's tail and return the parent it was stored under
        (``OMITTED``: the active leaf); ``NOT_INSERTED`` (nothing written) if the id exists.
        Call after ``begin_write``.
        """
        tail = self._tails.get(session_id) or self._tail(session_id)
        if parent_id is OMITTED:
            parent_id = tail.leaf_id
        changed = self.db.write(
            self._INSERT_MESSAGE,
            (
                session_id,
                encoded.id,
                tail.next_seq,
                parent_id,
                encoded.role,
                encoded.slices[0],
                encoded.continuation_count,
                encoded.token_estimate,
                created_at,
                _blob(encoded.digest),
            ),
        )
        if changed == 0:
            return NOT_INSERTED
        if encoded.continuation_count:
            self._write_continuations(session_id, encoded)
        if encoded.payloads:
            self._put_payloads(encoded.payloads.values())
        if encoded.references:
            self._add_references(session_id, encoded.id, encoded.references)
        if self._fts:
            self._index(session_id, encoded.id, encoded.role, indexed_text(encoded.message))
        tail.leaf_id = encoded.id
        tail.next_seq += 1
        if not keep_memo:
            self._memos.pop(session_id, None)
        elif session_id in self._memos:  # no memo (the common case): no call
            self._memo_after_insert(session_id, encoded.id, parent_id, encoded.token_estimate)
        return parent_id

    _UPSERT_CONTINUATION = (
        "INSERT INTO session_message_chunks (session_id, id, idx, content) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (session_id, id, idx) DO UPDATE SET content = excluded.content"
    )

    def _write_continuations(self, session_id: str, encoded: EncodedMessage) -> None:
        self.db.executemany(
            self._UPSERT_CONTINUATION,
            (
                (session_id, encoded.id, index, piece)
                for index, piece in enumerate(encoded.slices[1:], start=1)
            ),
        )

    _SELECT_FULL_CONTENT = "SELECT content FROM session_messages WHERE session_id = ? AND id = ?"

    def stored_content(self, session_id: str, message_id: str, chunks: int) -> str | None:
        """The full stored JSON of one row (continuations joined)."""
        row = self.db.query_one(self._SELECT_FULL_CONTENT, (session_id, message_id))
        if row is None:
            return None
        content = row["content"]
        if chunks:
            content += "".join(self._continuations(session_id, [message_id]).get(message_id, ()))
        return content

    _STAMP_DIGEST = "UPDATE session_messages SET content_hash = ? WHERE session_id = ? AND id = ?"

    def stamp_digest(self, session_id: str, message_id: str, digest: bytes) -> None:
        self.db.write(self._STAMP_DIGEST, (_blob(digest), session_id, message_id))

    _UPDATE_MESSAGE = (
        "UPDATE session_messages SET role = ?, content = ?, content_chunks = ?,"
        " token_estimate = ?, content_hash = ? WHERE session_id = ? AND id = ?"
    )
    _DELETE_SURPLUS_CONTINUATIONS = (
        "DELETE FROM session_message_chunks WHERE session_id = ? AND id = ? AND idx > ?"
    )

    def replace(self, session_id: str, encoded: EncodedMessage, previous: StoredRow) -> None:
        """Overwrite a row's content in place (parent and seq unchanged)."""
        self.db.write(
            self._UPDATE_MESSAGE,
            (
                encoded.role,
                encoded.slices[0],
                encoded.continuation_count,
                encoded.token_estimate,
                _blob(encoded.digest),
                session_id,
                encoded.id,
            ),
        )
        if previous.chunks > encoded.continuation_count:
            self.db.execute(
                self._DELETE_SURPLUS_CONTINUATIONS,
                (session_id, encoded.id, encoded.continuation_count),
            )
        if encoded.continuation_count:
            self._write_continuations(session_id, encoded)
        self._replace_references(session_id, encoded)
        if self._fts:
            self._reindex(session_id, encoded.id, encoded.role, indexed_text(encoded.message))
        memo = self._memos.get(session_id)
        if memo is not None and encoded.id in memo.counted:
            memo.total += encoded.token_estimate - previous.token_estimate

    _SELECT_DELETE_TARGETS = (
        "SELECT id, parent_id, content_chunks FROM session_messages"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )
    _SELECT_CHILDREN_OF_ANY = (
        "SELECT id, parent_id FROM session_messages"
        " WHERE session_id = ? AND parent_id IN (SELECT value FROM json_each(?))"
    )
    _REPARENT = "UPDATE session_messages SET parent_id = ? WHERE session_id = ? AND id = ?"
    _DELETE_MESSAGES = (
        "DELETE FROM session_messages"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )
    _DELETE_CONTINUATIONS = (
        "DELETE FROM session_message_chunks"
        " WHERE session_id = ? AND id IN (SELECT value FROM json_each(?))"
    )

    def delete(self, session_id: str, message_ids: Sequence[str]) -> None:
        """Delete rows, splicing each surviving child to its nearest surviving ancestor."""
        targets = self.db.query(
            self._SELECT_DELETE_TARGETS, (session_id, json.dumps(list(message_ids)))
        )
        if not targets:
            return
        parents = {row["id"]: row["parent_id"] for row in targets}
        ids_json = json.dumps(list(parents))
        for child in self.db.query(self._SELECT_CHILDREN_OF_ANY, (session_id, ids_json)):
            if child["id"] in parents:
                continue
            self.db.execute(
                self._REPARENT,
                (_surviving_ancestor(child["parent_id"], parents), session_id, child["id"]),
            )
        self.db.execute(self._DELETE_MESSAGES, (session_id, ids_json))
        chunked = [row["id"] for row in targets if row["content_chunks"]]
        if chunked:
            self.db.execute(self._DELETE_CONTINUATIONS, (session_id, json.dumps(chunked)))
        self._drop_references(session_id, list(parents))
        if self._fts:
            self.db.executemany(
                self._UNINDEX, ((fts_rowid(session_id, message_id),) for message_id in parents)
            )
        self._tails.pop(session_id, None)
        self._memos.pop(session_id, None)
        if session_id in self._unsettled:
            self._restructured.add(session_id)

    _CLEAR_MESSAGES = "DELETE FROM session_messages WHERE session_id = ?"
    _CLEAR_CONTINUATIONS = "DELETE FROM session_message_chunks WHERE session_id = ?"
    _CLEAR_COMPACTIONS = "DELETE FROM session_compactions WHERE session_id = ?"
    _SELECT_SESSION_REFERENCES = (
        "SELECT DISTINCT hash FROM session_attachment_refs WHERE session_id = ?"
    )
    _CLEAR_REFERENCES = "DELETE FROM session_attachment_refs WHERE session_id = ?"
    _CLEAR_INDEX = "DELETE FROM session_fts WHERE session_id = ?"

    def clear(self, session_id: str) -> None:
        """Delete every row, continuation, compaction, reference (and orphaned payload)."""
        self.db.execute(self._CLEAR_MESSAGES, (session_id,))
        self.db.execute(self._CLEAR_CONTINUATIONS, (session_id,))
        self.db.execute(self._CLEAR_COMPACTIONS, (session_id,))
        hashes = [
            row["hash"] for row in self.db.query(self._SELECT_SESSION_REFERENCES, (session_id,))
        ]
        if hashes:
            self.db.execute(self._CLEAR_REFERENCES, (session_id,))
            self._collect_garbage(hashes)
        if self._fts:
            self.db.execute(self._CLEAR_INDEX, (session_id,))
        self._tails[session_id] = _Tail(None, 1)
        self._memos.pop(session_id, None)
        self._compactions[session_id] = []
        if session_id in self._unsettled:
            self._restructured.add(session_id)

    # ── attachments ─────────────────────────────────────────────────

    _SELECT_PAYLOAD_EXISTS = "SELECT 1 FROM session_attachment_meta WHERE hash = ?"
    _INSERT_PAYLOAD_META = (
        "INSERT OR IGNORE INTO session_attachment_meta (hash, bytes, media_type, chunks)"
        " VALUES (?, ?, ?, ?)"
    )
    _INSERT_PAYLOAD_CHUNK = (
        "INSERT OR IGNORE INTO session_attachment_chunks (hash, idx, data) VALUES (?, ?, ?)"
    )

    def _put_payloads(self, payloads: Iterable[Payload]) -> None:
        """Store each payload once: an already-stored hash costs one read and no write."""
        for payload in payloads:
            if self.db.query_one(self._SELECT_PAYLOAD_EXISTS, (payload.hash,)) is not None:
                continue
            pieces = [
                payload.data[start : start + MAX_INLINE_ROW_BYTES]
                for start in range(0, len(payload.data), MAX_INLINE_ROW_BYTES)
            ]
            self.db.execute(
                self._INSERT_PAYLOAD_META,
                (payload.hash, len(payload.data), payload.media_type, len(pieces)),
            )
            self.db.executemany(
                self._INSERT_PAYLOAD_CHUNK,
                ((payload.hash, index, piece) for index, piece in enumerate(pieces)),
            )

    _INSERT_REFERENCE = (
        "INSERT OR IGNORE INTO session_attachment_refs (session_id, message_id, hash)"
        " VALUES (?, ?, ?)"
    )

    def _add_references(self, session_id: str, message_id: str, hashes: Iterable[str]) -> None:
        self.db.executemany(
            self._INSERT_REFERENCE, ((session_id, message_id, digest) for digest in sorted(hashes))
        )

    _SELECT_REFERENCES = (
        "SELECT hash FROM session_attachment_refs WHERE session_id = ? AND message_id = ?"
    )
    _DELETE_REFERENCE = (
        "DELETE FROM session_attachment_refs WHERE session_id = ? AND message_id = ? AND hash = ?"
    )

    def _replace_references(self, session_id: str, encoded: EncodedMessage) -> None:
        current = {
            row["hash"] for row in self.db.query(self._SELECT_REFERENCES, (session_id, encoded.id))
        }
        if encoded.payloads:
            self._put_payloads(encoded.payloads.values())
        added = encoded.references - current
        dropped = current - encoded.references
        if added:
            self._add_references(session_id, encoded.id, added)
        if dropped:
            self.db.executemany(
                self._DELETE_REFERENCE,
                ((session_id, encoded.id, digest) for digest in sorted(dropped)),
            )
            self._collect_garbage(sorted(dropped))

    _SELECT_REFERENCES_OF_ANY = (
        "SELECT DISTINCT hash FROM session_attachment_refs"
        " WHERE session_id = ? AND message_id IN (SELECT value FROM json_each(?))"
    )
    _DELETE_REFERENCES_OF_ANY = (
        "DELETE FROM session_attachment_refs"
        " WHERE session_id = ? AND message_id IN (SELECT value FROM json_each(?))"
    )

    def _drop_references(self, session_id: str, message_ids: list[str]) -> None:
        ids_json = json.dumps(message_ids)
        hashes = [
            row["hash"]
            for row in self.db.query(self._SELECT_REFERENCES_OF_ANY, (session_id, ids_json))
        ]
        if hashes:
            self.db.execute(self._DELETE_REFERENCES_OF_ANY, (session_id, ids_json))
            self._collect_garbage(hashes)

    # No index on refs.hash: collecting scans the references, which only deletes pay for.
    _DELETE_ORPHAN_CHUNKS = """
        DELETE FROM session_attachment_chunks
        WHERE hash IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (
            SELECT 1 FROM session_attachment_refs AS r
            WHERE r.hash = session_attachment_chunks.hash
          )
    """
    _DELETE_ORPHAN_META = """
        DELETE FROM session_attachment_meta
        WHERE hash IN (SELECT value FROM json_each(?))
          AND NOT EXISTS (
            SELECT 1 FROM session_attachment_refs AS r WHERE r.hash = session_attachment_meta.hash
          )
    """

    def _collect_garbage(self, hashes: Sequence[str]) -> None:
        """Delete the payloads among ``hashes`` that no message references any more."""
        hashes_json = json.dumps(list(hashes))
        self.db.execute(self._DELETE_ORPHAN_CHUNKS, (hashes_json,))
        self.db.execute(self._DELETE_ORPHAN_META, (hashes_json,))

    _SELECT_PAYLOADS = """
        SELECT a.hash, a.media_type, c.data
        FROM session_attachment_meta AS a
        JOIN session_attachment_chunks AS c ON c.hash = a.hash
        WHERE a.hash IN (SELECT value FROM json_each(?))
        ORDER BY a.hash, c.idx
    """

    def load_payloads(self, hashes: set[str]) -> dict[str, tuple[bytes, str]]:
        """``{hash: (bytes, media_type)}`` for the stored payloads among ``hashes``."""
        pieces: dict[str, list[bytes]] = {}
        media_types: dict[str, str] = {}
        for row in self.db.query(self._SELECT_PAYLOADS, (json.dumps(sorted(hashes)),)):
            pieces.setdefault(row["hash"], []).append(row["data"])
            media_types[row["hash"]] = row["media_type"]
        return {digest: (b"".join(parts), media_types[digest]) for digest, parts in pieces.items()}

    # ── compactions ─────────────────────────────────────────────────

    _SELECT_COMPACTIONS = (
        "SELECT id, summary, from_message_id, to_message_id, created_at"
        " FROM session_compactions WHERE session_id = ? ORDER BY seq"
    )

    def compactions(self, session_id: str) -> list[StoredCompaction]:
        """The session's overlays in insertion order (cached)."""
        cached = self._compactions.get(session_id)
        if cached is None:
            cached = [
                StoredCompaction(
                    row["id"],
                    row["summary"],
                    row["from_message_id"],
                    row["to_message_id"],
                    row["created_at"],
                )
                for row in self.db.query(self._SELECT_COMPACTIONS, (session_id,))
            ]
            self._compactions[session_id] = cached
        return cached

    def hidden_ids(self, session_id: str) -> frozenset[str]:
        """Ids of stored rows that echo one of this session's overlays (#1984): never shown."""
        return frozenset(COMPACTION_PREFIX + c.id for c in self.compactions(session_id))

    _INSERT_COMPACTION = """
        INSERT INTO session_compactions
            (session_id, id, seq, summary, from_message_id, to_message_id, created_at)
        VALUES (?, ?, (
            SELECT coalesce(max(seq), 0) + 1 FROM session_compactions WHERE session_id = ?
        ), ?, ?, ?, ?)
    """

    def add_compaction(self, session_id: str, compaction: StoredCompaction) -> None:
        self.db.execute(
            self._INSERT_COMPACTION,
            (
                session_id,
                compaction.id,
                session_id,
                compaction.summary,
                compaction.from_message_id,
                compaction.to_message_id,
                compaction.created_at,
            ),
        )
        self._compactions.pop(session_id, None)
        self._memos.pop(session_id, None)

    # ── full-text search ────────────────────────────────────────────

    _CREATE_FTS = (
        "CREATE VIRTUAL TABLE IF NOT EXISTS session_fts USING fts5("
        "id UNINDEXED, session_id UNINDEXED, role UNINDEXED, content,"
        f" tokenize = '{FTS_TOKENIZER}')"
    )
    _SELECT_ALL_FOR_INDEX = (
        "SELECT session_id, id, role, content, content_chunks FROM session_messages"
    )
    _INDEX = "INSERT INTO session_fts (rowid, id, session_id, role, content) VALUES (?, ?, ?, ?, ?)"
    _UNINDEX = "DELETE FROM session_fts WHERE rowid = ?"
    _SELECT_INDEXED = "SELECT role, content FROM session_fts WHERE rowid = ?"

    @property
    def has_index(self) -> bool:
        return self._fts

    def ensure_index(self) -> None:
        """Create the FTS table and index every stored message (all sessions), once."""
        if self._fts:
            return
        if self.db.query_one(_FTS_EXISTS) is None:  # another process may have built it
            self.db.execute(self._CREATE_FTS)
            self._backfill_index()
        self._fts = True
        # Until the commit, a caller's savepoint rollback could still take the table away.
        self._fts_unconfirmed = True
        self.db.after_commit(self._confirm_index)
        self.db.on_rollback(self._forget_index)

    def _confirm_index(self) -> None:
        self._fts_unconfirmed = False

    def _forget_index(self) -> None:
        self._fts = False
        self._fts_unconfirmed = False

    def _backfill_index(self) -> None:
        # Unlike the reference's SQL-only backfill, chunked rows are reassembled and indexed too.
        batch: list[tuple[int, str, str, str, str]] = []
        for row in self.db.iterate(self._SELECT_ALL_FOR_INDEX):
            content = row["content"]
            if row["content_chunks"]:
                continuations = self._continuations(row["session_id"], [row["id"]])
                content += "".join(continuations.get(row["id"], ()))
            message = decode_content(content)
            text = indexed_text(message) if message is not None else ""
            if text:
                rowid = fts_rowid(row["session_id"], row["id"])
                batch.append((rowid, row["id"], row["session_id"], row["role"], text))
            if len(batch) >= _FTS_BACKFILL_BATCH_ROWS:
                self.db.executemany(self._INDEX, batch)
                batch = []
        if batch:
            self.db.executemany(self._INDEX, batch)

    def _index(self, session_id: str, message_id: str, role: str, text: str) -> None:
        if text:
            self.db.write(
                self._INDEX, (fts_rowid(session_id, message_id), message_id, session_id, role, text)
            )

    def _reindex(self, session_id: str, message_id: str, role: str, text: str) -> None:
        rowid = fts_rowid(session_id, message_id)
        existing = self.db.query_one(self._SELECT_INDEXED, (rowid,))
        if existing is not None:
            if existing["content"] == text and existing["role"] == role:
                return
            self.db.execute(self._UNINDEX, (rowid,))
        self._index(session_id, message_id, role, text)

    _SEARCH = """
        SELECT f.id, f.role, f.content, f.rank
        FROM session_fts AS f
        WHERE session_fts MATCH :query AND f.session_id = :sid
          AND f.id NOT IN (
            SELECT :prefix || c.id FROM session_compactions AS c WHERE c.session_id = :sid
          )
          AND EXISTS (
            SELECT 1 FROM session_messages AS m WHERE m.session_id = :sid AND m.id = f.id
          )
        ORDER BY f.rank
        LIMIT :limit
    """

    def search(self, session_id: str, match: str, limit: int) -> list[SearchResult]:
        """Rows of the session matching ``match`` (a built FTS5 query), best bm25 rank first."""
        rows = self.db.query(
            self._SEARCH,
            {
                "query": match,
                "sid": session_id,
                "prefix": COMPACTION_PREFIX,
                "limit": limit,
            },
        )
        return [
            SearchResult(row["id"], row["role"], row["content"], float(row["rank"])) for row in rows
        ]


# sqlite3 binds str, int, float and bytearray directly, but looks every other value (bytes
# included) up in its adapter registry first: a failed attribute lookup that builds and clears
# an AttributeError, about 4% of a small append. A bytearray copy of a 32-byte digest costs far
# less and is stored as the same BLOB.
_blob = bytearray


def _surviving_ancestor(parent_id: str | None, deleted: dict[str, str | None]) -> str | None:
    """Follow parent pointers through the deleted rows to the first survivor (or root)."""
    seen: set[str] = set()
    while parent_id is not None and parent_id in deleted and parent_id not in seen:
        seen.add(parent_id)
        parent_id = deleted[parent_id]
    return None if parent_id in seen else parent_id
