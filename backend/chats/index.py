"""The cross-chat message index: one FTS5 table in the directory answering for every chat.

Two ways to search every message of a directory:

* **Indexed** (the default): ``message_fts`` in ``directory.sqlite`` holds the searchable text
  of every message of every chat generation whose files exist. One query, whatever the number
  of chats; deleted chats are filtered out by a join on ``chats.deleted_at``.
* **Fan-out** (the RFC's v1): ask each live chat's own FTS index (``Session.search``) and merge
  by rank. It needs no directory index, so it is the reference the indexed path is verified
  against, and the source of truth a repair rebuilds from is the same data it searches.

Tables, their SQL and their invariants: :mod:`backend.chats.index_store` (on PostgreSQL its
twin :mod:`backend.chats.pg_index_store`, picked by ``twin_of``); lease holders:
:mod:`backend.chats.lease_holders`; the fan-out merge: :mod:`backend.chats.fanout`. This module
is the orchestration: change feeds in, documents out.

**Keeping it current.** Each open chat's change feed (``Sessions.subscribe``) is recorded in
memory per chat, in commit order: the text each touched message now has (``append``,
``update``, ``import``), ``None`` for deleted ones, "everything else is gone" for ``clear``.
A flush (before every indexed search, every :data:`FLUSH_EVERY_EVENTS` events, when a chat is
closed) writes the difference in one directory transaction per chat; a digest per document
skips rewriting unchanged text. Flushes are serialised, so batches land in feed order.

The recorded payloads are replayed only when they are the whole story: the events all came
from one connection and ``PRAGMA data_version`` of that connection has not moved since the
last flush (no other connection, in this process or another, committed to the file). Otherwise
the touched messages are re-read **from the file**, under the directory's write lock, so two
writers racing on one message both end with whatever the file holds last.

**Detecting and repairing lag (the per-chat high-water mark).** A chat's index can only fall
behind while someone writes it. So before a ``Chats`` instance opens a chat for writing it
commits a **lease** row ``(chat_num, holder)``; it deletes the row when it closes the chat after
a successful flush. Invariant: *a chat without a lease row is indexed exactly as its file says*.
A process killed mid-write leaves its leases behind; the next ``Chats`` opened on the directory
finds leases whose holder process is gone, rebuilds those chats from their files
(:meth:`MessageIndex.resync`) and drops the leases. Leases of live holders (another process
working right now) are left alone: that process keeps its own chats current. A chat file
written without going through ``Chats`` is outside this contract; ``repair(full=True)``
re-derives every chat from its file. A schema change that needs a rebuild uses the same
mechanism: it leases every chat to ``REBUILD_HOLDER``, a holder that is always gone.

**Coupling.** A chat's documents are read through the sessions package's read API
(``backend.sessions.SearchableDocuments``), which owns the schema and the rule of what
``Session.search`` can find; the index runs SQL only on its own tables.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from backend.chats.chat_records import ChatRecord
from backend.chats.directory_storage import twin_of
from backend.chats.index_store import DocumentCounts, MessageIndexStore
from backend.chats.lease_holders import holder_is_gone, new_holder, retire_holder
from backend.chats.values import IndexRepair
from backend.sessions import COMPACTION_PREFIX, SearchableDocuments, SessionChangeEvent
from backend.sessions.search import indexed_text
from backend.storage import Scope

__all__ = ["CONVERSATION", "FLUSH_EVERY_EVENTS", "MessageIndex"]

logger = logging.getLogger(__name__)

FLUSH_EVERY_EVENTS = 512
"""Pending events that trigger a flush on the writing thread (bounds memory and staleness)."""
CONVERSATION = ""
"""The session id of a chat's conversation inside its file (``sessions.session("")``)."""


ChatLoader = Callable[[int], "ChatRecord | None"]
PathOf = Callable[["ChatRecord"], Path]
Clock = Callable[[], int]
ForeignCommits = Callable[[int, int, object], bool]
"""``(chat_num, generation, source)`` -> did any connection other than ``source`` commit to
the chat's file since the last call? (``True`` when unknown.)"""


@dataclass
class _Pending:
    """What the change feed of one chat said since the last flush, in commit order."""

    source: object
    texts: dict[str, str | None] = field(default_factory=dict)  # outcome known per id
    unknown: set[str] = field(default_factory=set)  # re-read these from the file
    cleared: bool = False  # every message not in ``texts`` is gone
    reread_all: bool = False  # the feed said something we cannot replay: rebuild
    mixed: bool = False  # events came from two connections: their order is unknown


class MessageIndex:
    """Change feeds in, documents out: keeps ``message_fts`` equal to the chats' files.

    Flushes are serialised (``_flush_lock``), so batches reach the index in the order their
    events were delivered; within one connection the sessions feed delivers in commit order.
    """

    def __init__(
        self,
        db: Scope,
        *,
        load_chat: ChatLoader,
        path_of: PathOf,
        unpurged_chats: Callable[[], Sequence[int]],
        foreign_commits: ForeignCommits,
        clock: Clock,
        search_db: Scope | None = None,
        flush_every: int = FLUSH_EVERY_EVENTS,
    ) -> None:
        self.db = db
        self.store = twin_of(MessageIndexStore, db)(db, search_db)
        self.holder = new_holder()
        self._load_chat = load_chat
        self._path_of = path_of
        self._unpurged_chats = unpurged_chats
        self._foreign_commits = foreign_commits
        self._clock = clock
        self._flush_every = flush_every
        self._hints_lock = threading.Lock()
        self._flush_lock = threading.RLock()
        self._hints: dict[tuple[int, int], _Pending] = {}
        self._pending = 0
        self._recorded = 0  # every change ever recorded: moves while people write
        self._needs_resync: set[int] = set()

    # ── the change feed ─────────────────────────────────────────────

    def observe(
        self, chat_num: int, generation: int, source: object, event: SessionChangeEvent
    ) -> bool:
        """Record one change event of a chat's conversation; True when a flush is due."""
        if event.session_id != CONVERSATION:
            return False
        kind = event.type
        if kind == "append" and not event.inserted:
            return False
        with self._hints_lock:
            pending = self._hints.get((chat_num, generation))
            if pending is None:
                pending = self._hints[(chat_num, generation)] = _Pending(source)
            elif pending.source is not source:
                pending.mixed = True
            if kind in ("append", "update", "import"):
                message_id = event.message["id"]
                if message_id.startswith(COMPACTION_PREFIX):
                    pending.unknown.add(message_id)  # may be a hidden overlay echo
                else:
                    pending.texts[message_id] = indexed_text(event.message)
                    pending.unknown.discard(message_id)
            elif kind == "delete":
                for message_id in event.message_ids:
                    pending.texts[message_id] = None
                    pending.unknown.discard(message_id)
            elif kind == "clear":
                pending.texts.clear()
                pending.unknown.clear()
                pending.cleared = True
            elif kind in ("compact", "compaction"):
                # A new overlay hides a stored echo row ``compaction_<id>``, if one exists.
                pending.unknown.add(COMPACTION_PREFIX + event.compaction.id)
            else:
                pending.reread_all = True
            self._pending += 1
            self._recorded += 1
            return self._pending >= self._flush_every

    @property
    def recorded(self) -> int:
        """Changes recorded since this index opened (grows with every write of its chats)."""
        with self._hints_lock:
            return self._recorded

    @property
    def pending(self) -> int:
        with self._hints_lock:
            return self._pending + len(self._needs_resync)

    def flush(self) -> IndexRepair:
        """Apply every pending change; a chat that fails is rebuilt on the next flush."""
        with self._flush_lock:
            with self._hints_lock:
                batch, self._hints, self._pending = self._hints, {}, 0
                retry, self._needs_resync = self._needs_resync, set()
            counts = DocumentCounts()
            for (chat_num, generation), pending in batch.items():
                if chat_num in retry:
                    continue
                try:
                    counts += self._apply(chat_num, generation, pending)
                except Exception:
                    logger.warning(
                        "message index: chat #%s will be rebuilt", chat_num, exc_info=True
                    )
                    with self._hints_lock:
                        self._needs_resync.add(chat_num)
            for chat_num in retry:
                counts += self._resync_or_remember(chat_num)
            return _report(counts, chats=len(batch) + len(retry))

    def _apply(self, chat_num: int, generation: int, pending: _Pending) -> DocumentCounts:
        with self.db.transaction():
            record = self._load_chat(chat_num)
            if record is None or record.generation != generation or record.purged_at is not None:
                return DocumentCounts()  # a stale generation's writes never reach the index
            if record.temporary:
                return DocumentCounts()  # a temporary chat is never searched
            # The events replay exactly when this connection alone wrote the file since the
            # last flush; otherwise re-read the touched messages' committed state (taken under
            # the directory's write lock, so racing processes converge on the file's state).
            trusted = not pending.mixed and not self._foreign_commits(
                chat_num, generation, pending.source
            )
            if pending.reread_all or (pending.cleared and not trusted):
                return self._rebuild(chat_num, record)
            reread = set(pending.unknown) if trusted else pending.unknown | pending.texts.keys()
            found: dict[str, str] = {}
            if reread:
                with SearchableDocuments.open(self._path_of(record)) as source:
                    found = source.texts(CONVERSATION, reread) if source else {}
            changes: dict[str, str | None] = dict(pending.texts) if trusted else {}
            changes.update({message_id: found.get(message_id) for message_id in reread})
            if pending.cleared:
                return self.store.replace_all(
                    chat_num, {i: text for i, text in changes.items() if text}
                )
            return self.store.apply(chat_num, changes)

    def _rebuild(self, chat_num: int, record: ChatRecord) -> DocumentCounts:
        if record.temporary:  # never searched: nothing of it is stored here
            return self.store.replace_all(chat_num, {})
        with SearchableDocuments.open(self._path_of(record)) as source:
            truth = source.texts(CONVERSATION) if source else {}
        return self.store.replace_all(chat_num, truth)

    def forget_hints(self, chat_num: int) -> None:
        with self._hints_lock:
            for key in [key for key in self._hints if key[0] == chat_num]:
                del self._hints[key]
            self._needs_resync.discard(chat_num)

    def has_pending(self, chat_num: int) -> bool:
        with self._hints_lock:
            return chat_num in self._needs_resync or any(k[0] == chat_num for k in self._hints)

    def needs_resync(self, chat_num: int) -> bool:
        with self._hints_lock:
            return chat_num in self._needs_resync

    # ── rebuild and repair ──────────────────────────────────────────

    def resync(self, chat_num: int) -> DocumentCounts:
        """Rebuild one chat's documents from its file (or drop them if it is purged)."""
        with self._flush_lock, self.db.transaction():
            record = self._load_chat(chat_num)
            if record is None or record.purged_at is not None:
                return DocumentCounts(removed=self.store.drop_chat(chat_num))
            return self._rebuild(chat_num, record)

    def _resync_or_remember(self, chat_num: int) -> DocumentCounts:
        try:
            return self.resync(chat_num)
        except Exception:
            logger.warning("message index: chat #%s could not be rebuilt", chat_num, exc_info=True)
            with self._hints_lock:
                self._needs_resync.add(chat_num)
            return DocumentCounts()

    def repair(self, *, full: bool = False) -> IndexRepair:
        """Catch up after crashes: rebuild chats leased by gone holders (all chats if ``full``)."""
        counts = DocumentCounts()
        flushed = self.flush()
        counts.added, counts.updated, counts.removed = (
            flushed.documents_added,
            flushed.documents_updated,
            flushed.documents_removed,
        )
        stale = [
            (num, holder)
            for num, holder in self.store.leases()
            if holder != self.holder and holder_is_gone(holder)
        ]
        targets = {num for num, _ in stale}
        if full:
            targets |= set(self._unpurged_chats()) | set(self.store.indexed_chats())
        failed: set[int] = set()
        for chat_num in sorted(targets):
            counts += self._resync_or_remember(chat_num)
            if self.needs_resync(chat_num):
                failed.add(chat_num)
        released = 0
        with self.db.transaction():
            for num, holder in stale:
                if num not in failed:
                    self.store.release(num, holder)
                    released += 1
        return _report(counts, chats=len(targets), leases=released)

    # ── leases ──────────────────────────────────────────────────────

    def acquire_lease(self, chat_num: int) -> None:
        with self.db.transaction():
            self.store.acquire(chat_num, self.holder, self._clock())

    def release_lease(self, chat_num: int) -> None:
        """Release after a clean flush; a chat that failed keeps its lease for repair."""
        if self.needs_resync(chat_num):
            self._resync_or_remember(chat_num)
            if self.needs_resync(chat_num):
                return
        with self.db.transaction():
            self.store.release(chat_num, self.holder)

    def close(self) -> None:
        retire_holder(self.holder)


def _report(counts: DocumentCounts, *, chats: int, leases: int = 0) -> IndexRepair:
    return IndexRepair(
        chats_checked=chats,
        documents_added=counts.added,
        documents_updated=counts.updated,
        documents_removed=counts.removed,
        leases_released=leases,
    )
