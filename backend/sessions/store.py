"""SessionStore: one conversation file's storage engine, and the state it derives from the file.

The store composes one object per concern, each owning its tables (module map in
``backend/sessions/__init__.py``): ``rows`` and ``paths`` read messages, ``compactions``,
``attachments`` and ``index`` (full-text search) keep what hangs off them, and a
``MessageWriter`` runs the statements of every write. Every write goes through this class,
because what it keeps itself is the per-session state derived from the file, and the rules for
when that state may be trusted.

Invariants:

* ``seq`` orders rows of a session; a child is inserted after its parent (only an import may
  name a parent that comes later), so the max-seq row is the **active leaf**. The tail
  ``{leaf_id, next_seq}`` is read once and then maintained in place; the token estimate of
  the active path is memoised per leaf (:mod:`backend.sessions.token_memo`). Both are caches
  of the file, as are the compaction lists and whether the FTS table exists: they are dropped
  when a write's transaction rolls back (the handle catches the failure of a transaction it
  opened; a caller's transaction gets a ``Database.on_rollback`` hook) and when another
  connection committed (``PRAGMA data_version`` moved), so a foreign process writing the same
  file can never make this one reuse a ``seq`` or miss a leaf. A write inside a transaction
  the caller owns re-checks them against the file (the caller may roll back to a savepoint,
  which runs no hook): see ``begin_write``.
* Every method that writes must run inside ``database.transaction()``; every method that reads
  caches must run under ``database.lock``. The handle guarantees both.
* **A retired file refuses writes** (the mark is :mod:`backend.sessions.schema`'s). The mark's
  commit moves ``data_version``; ``begin_write`` already reads it, so only then does it read
  the mark, and from then on every write of this store raises ``retired_error``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from backend.errors import NotFoundError
from backend.sessions.attachment_store import AttachmentStore
from backend.sessions.attachments import Loader
from backend.sessions.compaction_store import CompactionStore
from backend.sessions.encoding import EncodedMessage
from backend.sessions.paths import PathReader
from backend.sessions.records import OMITTED, StoredCompaction, _Omitted
from backend.sessions.rows import RowReader, StoredRow
from backend.sessions.schema import MIGRATION_COMPONENT, MIGRATIONS, is_marked_retired
from backend.sessions.search_index import SearchIndex
from backend.sessions.token_memo import TokenMemo, derive_memo, names_an_overlay
from backend.sessions.writes import MessageWriter
from backend.storage import Scope


@dataclass(slots=True)
class _Tail:
    leaf_id: str | None
    next_seq: int


class _NotInserted(enum.Enum):
    NOT_INSERTED = "NOT_INSERTED"


NOT_INSERTED: Final = _NotInserted.NOT_INSERTED


class SessionStore:
    """The storage engine under every ``Session`` handle of one file."""

    # The stores it composes, and its schema: the PostgreSQL twin (``pg_store``) names its own.
    migrations: Sequence[Callable[[Any], None]] = MIGRATIONS
    attachment_store: type[AttachmentStore] = AttachmentStore
    compaction_store: type[CompactionStore] = CompactionStore
    row_reader: type[RowReader] = RowReader
    path_reader: type[PathReader] = PathReader
    search_index: type[SearchIndex] = SearchIndex
    message_writer: type[MessageWriter] = MessageWriter

    def __init__(
        self,
        database: Scope,
        retired_error: Callable[[], Exception] | None = None,
        shared_attachments: Loader | None = None,
    ) -> None:
        database.migrate(MIGRATION_COMPONENT, self.migrations)
        self.db = self._statements(database)
        self.retired = self._open_retired(database)
        """Sticky: once the file is known to be retired, every write raises ``retired_error``."""
        self.retired_error = retired_error or partial(
            NotFoundError, "conversation file", self._location(database)
        )
        self.attachments = self.attachment_store(self.db, shared_attachments)
        self.compactions = self.compaction_store(self.db)
        self.rows = self.row_reader(self.db, self.attachments)
        self.paths = self.path_reader(self.db, self.compactions)
        self.index = self.search_index(self.db, self.rows, self.compactions)
        self._writer = self.message_writer(self.db, self.attachments, self.compactions, self.index)
        self._tails: dict[str, _Tail] = {}
        self._memos: dict[str, TokenMemo] = {}
        self._data_version = self._read_data_version()
        # Sessions written inside a transaction the caller owns, and those of them whose rows
        # were deleted or cleared there (see ``begin_write``).
        self._unsettled: set[str] = set()
        self._restructured: set[str] = set()
        self._settle_armed = False
        self._forgetters: dict[str, Callable[[], None]] = {}

    # ── what differs by engine (overridden by the PostgreSQL twin) ──

    def _statements(self, database: Scope) -> Scope:
        """What the stores run their statements on: the file itself."""
        return database

    def _open_retired(self, database: Scope) -> bool:
        """Whether the file is retired, read when the store opens."""
        return is_marked_retired(database)

    def _is_retired(self) -> bool:
        return is_marked_retired(self.db)

    @staticmethod
    def _location(database: Scope) -> str:
        return str(getattr(database, "path", ""))

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
        if not self.retired and self._is_retired():
            self.retired = True
        self._tails.clear()
        self._memos.clear()
        self.compactions.forget_all()
        self.index.rediscover()

    def forget(self, session_id: str) -> None:
        """Drop the derived state of one session (its writes were rolled back)."""
        self._tails.pop(session_id, None)
        self._memos.pop(session_id, None)
        self.compactions.forget(session_id)

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

    folds_append_check = False
    """Whether :meth:`begin_append` differs from ``begin_write`` (the handle calls it only
    then: a file's append pays nothing for it)."""

    def begin_append(self, session_id: str, nested: bool) -> None:
        """``begin_write`` of a transaction whose first step is ``insert`` under the active
        leaf (an append): an engine may fold the check for foreign commits into the insert
        itself (the PostgreSQL twin does). The file needs no such thing."""
        self.begin_write(session_id, nested)

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
        self.compactions.forget(session_id)
        self.index.reverify()
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

    # ── token estimate ──────────────────────────────────────────────

    def token_estimate(self, session_id: str) -> int:
        """Tokens of the active path with overlays applied; memoised per leaf."""
        leaf_id = self.leaf_id(session_id)
        memo = self._memos.get(session_id)
        if memo is None or memo.leaf_id != leaf_id:
            memo = self._derive_memo(session_id, leaf_id)
            self._memos[session_id] = memo
        return memo.estimate

    def _derive_memo(self, session_id: str, leaf_id: str | None) -> TokenMemo:
        if leaf_id is None:
            return TokenMemo(None, set(), 0, 0)
        path = self.paths.path_tokens(session_id, leaf_id)
        hidden = self.compactions.hidden_ids(session_id)
        return derive_memo(leaf_id, path, hidden, self.compactions.load(session_id))

    def _memo_after_insert(
        self, session_id: str, message_id: str, parent_id: str | None, estimate: int
    ) -> None:
        memo = self._memos[session_id]
        if memo.extends_to(parent_id) and not names_an_overlay(
            message_id, self.compactions.load(session_id)
        ):
            memo.extend(message_id, estimate)
        else:
            del self._memos[session_id]

    # ── writes ──────────────────────────────────────────────────────

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
        if not self._writer.insert(session_id, encoded, tail.next_seq, parent_id, created_at):
            return NOT_INSERTED
        tail.leaf_id = encoded.id
        tail.next_seq += 1
        if not keep_memo:
            self._memos.pop(session_id, None)
        elif session_id in self._memos:  # no memo (the common case): no call
            self._memo_after_insert(session_id, encoded.id, parent_id, encoded.token_estimate)
        return parent_id

    def stamp_digest(self, session_id: str, message_id: str, digest: bytes) -> None:
        """Record the digest of a row stored without one (no cached state depends on it)."""
        self._writer.stamp_digest(session_id, message_id, digest)

    def replace(self, session_id: str, encoded: EncodedMessage, previous: StoredRow) -> None:
        """Overwrite a row's content in place (parent and seq unchanged)."""
        self._writer.replace(session_id, encoded, previous)
        memo = self._memos.get(session_id)
        if memo is not None and encoded.id in memo.counted:
            memo.total += encoded.token_estimate - previous.token_estimate

    def delete(self, session_id: str, message_ids: Sequence[str]) -> None:
        """Delete rows, splicing each surviving child to its nearest surviving ancestor."""
        if not self._writer.delete(session_id, message_ids):
            return
        self._tails.pop(session_id, None)
        self._memos.pop(session_id, None)
        if session_id in self._unsettled:
            self._restructured.add(session_id)

    def clear(self, session_id: str) -> None:
        """Delete every row, continuation, compaction, reference (and orphaned payload)."""
        self._writer.clear(session_id)
        self._tails[session_id] = _Tail(None, 1)
        self._memos.pop(session_id, None)
        if session_id in self._unsettled:
            self._restructured.add(session_id)

    def add_compaction(self, session_id: str, compaction: StoredCompaction) -> None:
        self.compactions.add(session_id, compaction)
        self._memos.pop(session_id, None)
