"""The cross-chat message index: one FTS5 table in the directory answering for every chat.

Two ways to search every message of a directory:

* **Indexed** (the default): ``message_fts`` in ``directory.sqlite`` holds the searchable text
  of every message of every chat generation whose files exist. One query, whatever the number
  of chats; deleted chats are filtered out by a join on ``chats.deleted_at``.
* **Fan-out** (the RFC's v1): ask each live chat's own FTS index (``Session.search``) and merge
  by rank. It needs no directory index, so it is the reference the indexed path is verified
  against, and the source of truth a repair rebuilds from is the same data it searches.

Tables (component ``chats.index``)::

    message_fts   fts5(content, chat_num UNINDEXED, message_id UNINDEXED)   rowid = doc
    message_docs  (chat_num, message_id, doc, digest)  WITHOUT ROWID   what is indexed, per chat
    index_leases  (chat_num, holder, acquired_at) WITHOUT ROWID   who may be writing a chat

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
mechanism: it leases every chat to :data:`REBUILD_HOLDER`, a holder that is always gone.

**Document ids** increase (``max(rowid) + 1``): FTS5 appends such rows cheaply, while
hash-scattered rowids made each insert about seven times slower.

**Coupling.** A chat's documents are read through the sessions package's read API
(``backend.sessions.SearchableDocuments``), which owns the schema and the rule of what
``Session.search`` can find; this module runs SQL only on its own tables.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from backend.chats.directory import ChatRecord
from backend.chats.models import ChatHit, IndexRepair
from backend.chats.snippets import SNIPPET_ARGS, SNIPPET_WINDOW_CHARS, snippets
from backend.sessions import COMPACTION_PREFIX, SearchableDocuments, SessionChangeEvent
from backend.sessions.search import FTS_TOKENIZER, indexed_text, phrase_query
from backend.storage import Database
from backend.storage.processes import Signer, sign, signer_state

logger = logging.getLogger(__name__)

COMPONENT = "chats.index"
FLUSH_EVERY_EVENTS = 512
"""Pending events that trigger a flush on the writing thread (bounds memory and staleness)."""
CONVERSATION = ""
"""The session id of a chat's conversation inside its file (``sessions.session("")``)."""
REBUILD_HOLDER = "rebuild"
"""A lease nobody holds: the chat's documents must be rebuilt from its file."""


def _m001_message_index(db: Database) -> None:
    db.execute(
        "CREATE VIRTUAL TABLE message_fts USING fts5("
        f"content, chat_num UNINDEXED, message_id UNINDEXED, tokenize = '{FTS_TOKENIZER}')"
    )
    db.execute(
        "CREATE TABLE message_docs (chat_num INTEGER NOT NULL, message_id TEXT NOT NULL, "
        "digest BLOB NOT NULL, PRIMARY KEY (chat_num, message_id)) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE index_leases (chat_num INTEGER NOT NULL, holder TEXT NOT NULL, "
        "acquired_at INTEGER NOT NULL, PRIMARY KEY (chat_num, holder)) WITHOUT ROWID"
    )


def _m002_sequential_documents(db: Database) -> None:
    """Key documents by increasing rowids (see MessageIndexStore) and rebuild every chat.

    The rebuild is requested the way a crash requests it: a lease held by nobody.
    """
    db.execute("DROP TABLE message_fts")
    db.execute("DROP TABLE message_docs")
    db.execute(
        "CREATE VIRTUAL TABLE message_fts USING fts5("
        f"content, chat_num UNINDEXED, message_id UNINDEXED, tokenize = '{FTS_TOKENIZER}')"
    )
    db.execute(
        "CREATE TABLE message_docs (chat_num INTEGER NOT NULL, message_id TEXT NOT NULL, "
        "doc INTEGER NOT NULL, digest BLOB NOT NULL, PRIMARY KEY (chat_num, message_id)) "
        "WITHOUT ROWID"
    )
    db.execute(
        "INSERT OR IGNORE INTO index_leases (chat_num, holder, acquired_at) "
        "SELECT num, ?, 0 FROM chats WHERE purged_at IS NULL",
        (REBUILD_HOLDER,),
    )


MIGRATIONS = (_m001_message_index, _m002_sequential_documents)


def text_digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


# ── lease holders ───────────────────────────────────────────────────

_live_holders: set[str] = set()
_live_holders_lock = threading.Lock()


def new_holder() -> str:
    """A lease holder name for one ``Chats`` instance: ``host:pid:random``."""
    holder = sign(uuid.uuid4().hex[:12])
    with _live_holders_lock:
        _live_holders.add(holder)
    return holder


def retire_holder(holder: str) -> None:
    with _live_holders_lock:
        _live_holders.discard(holder)


def holder_is_gone(holder: str) -> bool:
    """True when the instance that wrote a lease can no longer be writing.

    The rule of :mod:`backend.storage.processes`; within this process, a holder is gone once
    its ``Chats`` instance retired it.
    """
    if holder == REBUILD_HOLDER:
        return True
    state = signer_state(holder)
    if state is Signer.THIS_PROCESS:
        with _live_holders_lock:
            return holder not in _live_holders
    return state is Signer.GONE


# ── the directory-side store ────────────────────────────────────────


@dataclass
class _Counts:
    added: int = 0
    updated: int = 0
    removed: int = 0

    def __iadd__(self, other: _Counts) -> _Counts:
        self.added += other.added
        self.updated += other.updated
        self.removed += other.removed
        return self


class MessageIndexStore:
    """SQL of ``message_fts`` / ``message_docs`` / ``index_leases``; callers own transactions.

    Document rowids are handed out in increasing order (``max(rowid) + 1``, safe because
    every write holds the directory's write lock). FTS5 appends such rows to its segments
    cheaply; hash-scattered rowids made each insert about seven times slower.
    """

    def __init__(self, db: Database, search_db: Database | None = None) -> None:
        self.db = db
        self.search_db = search_db or db
        """Searches read here: a connection of their own never holds up the writers."""
        db.migrate(COMPONENT, MIGRATIONS)

    _SELECT_DOCS = (
        "SELECT message_id, doc, digest FROM message_docs "
        "WHERE chat_num = ? AND message_id IN (SELECT value FROM json_each(?))"
    )
    _SELECT_ALL_DOCS = "SELECT message_id, doc, digest FROM message_docs WHERE chat_num = ?"
    _MAX_DOC = "SELECT coalesce(max(rowid), 0) FROM message_fts"
    _INSERT_FTS = (
        "INSERT INTO message_fts (rowid, content, chat_num, message_id) VALUES (?, ?, ?, ?)"
    )
    _DELETE_FTS = "DELETE FROM message_fts WHERE rowid = ?"
    _UPSERT_DOC = (
        "INSERT INTO message_docs (chat_num, message_id, doc, digest) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (chat_num, message_id) DO UPDATE SET doc = excluded.doc, "
        "digest = excluded.digest"
    )
    _DELETE_DOC = "DELETE FROM message_docs WHERE chat_num = ? AND message_id = ?"

    def apply(self, chat_num: int, changes: Mapping[str, str | None]) -> _Counts:
        """Make the listed messages' documents equal ``changes`` (``None``: not searchable)."""
        if not changes:
            return _Counts()
        ids = json.dumps(list(changes))
        rows = self.db.query(self._SELECT_DOCS, (chat_num, ids))
        return self._write(chat_num, {row[0]: (row[1], bytes(row[2])) for row in rows}, changes)

    def replace_all(self, chat_num: int, truth: Mapping[str, str]) -> _Counts:
        """Make the chat's documents exactly ``truth``."""
        rows = self.db.query(self._SELECT_ALL_DOCS, (chat_num,))
        existing = {row[0]: (row[1], bytes(row[2])) for row in rows}
        changes: dict[str, str | None] = dict.fromkeys(existing.keys() - truth.keys())
        changes.update(truth)
        return self._write(chat_num, existing, changes)

    def _write(
        self,
        chat_num: int,
        existing: Mapping[str, tuple[int, bytes]],
        changes: Mapping[str, str | None],
    ) -> _Counts:
        counts = _Counts()
        unindex: list[tuple[int]] = []
        index: list[tuple[str, str]] = []
        gone: list[tuple[int, str]] = []
        for message_id, text in changes.items():
            old = existing.get(message_id)
            if not text:
                if old is not None:
                    unindex.append((old[0],))
                    gone.append((chat_num, message_id))
                    counts.removed += 1
                continue
            if old is not None:
                if old[1] == text_digest(text):
                    continue
                unindex.append((old[0],))
                counts.updated += 1
            else:
                counts.added += 1
            index.append((message_id, text))
        if unindex:
            self.db.executemany(self._DELETE_FTS, unindex)
        if gone:
            self.db.executemany(self._DELETE_DOC, gone)
        if index:
            first = int(self.db.query_one(self._MAX_DOC)[0]) + 1
            self.db.executemany(
                self._INSERT_FTS,
                (
                    (first + n, text, chat_num, message_id)
                    for n, (message_id, text) in enumerate(index)
                ),
            )
            self.db.executemany(
                self._UPSERT_DOC,
                (
                    (chat_num, message_id, first + n, text_digest(text))
                    for n, (message_id, text) in enumerate(index)
                ),
            )
        return counts

    def drop_chat(self, chat_num: int) -> int:
        """Forget every document of a chat (purge, re-creation); return how many."""
        return self.replace_all(chat_num, {}).removed

    _COUNT_DOCS = "SELECT count(*) FROM message_docs WHERE chat_num = ?"

    def count(self, chat_num: int) -> int:
        return int(self.db.query_one(self._COUNT_DOCS, (chat_num,))[0])

    _INDEXED_CHATS = "SELECT DISTINCT chat_num FROM message_docs"

    def indexed_chats(self) -> list[int]:
        return [row[0] for row in self.db.query(self._INDEXED_CHATS)]

    # ── leases ──────────────────────────────────────────────────────

    _ACQUIRE = "INSERT OR IGNORE INTO index_leases (chat_num, holder, acquired_at) VALUES (?, ?, ?)"
    _RELEASE = "DELETE FROM index_leases WHERE chat_num = ? AND holder = ?"
    _RELEASE_ALL = "DELETE FROM index_leases WHERE chat_num = ?"
    _LEASES = "SELECT chat_num, holder FROM index_leases ORDER BY chat_num"

    def acquire(self, chat_num: int, holder: str, now_ms: int) -> None:
        self.db.execute(self._ACQUIRE, (chat_num, holder, now_ms))

    def release(self, chat_num: int, holder: str) -> None:
        self.db.execute(self._RELEASE, (chat_num, holder))

    def release_all(self, chat_num: int) -> None:
        self.db.execute(self._RELEASE_ALL, (chat_num,))

    def leases(self) -> list[tuple[int, str]]:
        return [(row[0], row[1]) for row in self.db.query(self._LEASES)]

    # ── search ──────────────────────────────────────────────────────

    _SEARCH = (
        "SELECT f.rowid, c.id, f.message_id, f.rank "
        "FROM message_fts f JOIN chats c ON c.num = f.chat_num "
        "WHERE message_fts MATCH ? AND c.deleted_at IS NULL "
        "ORDER BY f.rank, c.id, f.message_id LIMIT ?"
    )
    # snippet() costs the square of a document's hits: run it here only on documents that
    # fit one snippet window; longer ones are windowed in memory (backend.chats.snippets).
    _SNIPPETS = (
        "SELECT rowid, CASE WHEN length(content) <= ? THEN snippet(message_fts, 0, ?, ?, ?, ?) "
        "END FROM message_fts WHERE message_fts MATCH ? "
        "AND rowid IN (SELECT value FROM json_each(?))"
    )
    _CONTENT = "SELECT content FROM message_fts WHERE rowid = ?"

    def search(self, match: str, limit: int) -> list[ChatHit]:
        """Best bm25 first over live chats; snippets computed for the returned rows only."""
        rows = self.search_db.query(self._SEARCH, (match, limit))
        if not rows:
            return []
        docs = json.dumps([row[0] for row in rows])
        found = {
            row[0]: row[1]
            for row in self.search_db.query(
                self._SNIPPETS, (SNIPPET_WINDOW_CHARS, *SNIPPET_ARGS, match, docs)
            )
        }
        long_docs = [doc for doc, snippet in found.items() if snippet is None]
        if long_docs:
            contents = [self.search_db.query_one(self._CONTENT, (doc,))[0] for doc in long_docs]
            found.update(zip(long_docs, snippets(contents, match), strict=True))
        return [
            ChatHit(chat_id=row[1], message_id=row[2], snippet=found.get(row[0]) or "", rank=row[3])
            for row in rows
        ]


# ── orchestration ───────────────────────────────────────────────────


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
        db: Database,
        *,
        load_chat: ChatLoader,
        path_of: PathOf,
        unpurged_chats: Callable[[], Sequence[int]],
        foreign_commits: ForeignCommits,
        clock: Clock,
        search_db: Database | None = None,
        flush_every: int = FLUSH_EVERY_EVENTS,
    ) -> None:
        self.db = db
        self.store = MessageIndexStore(db, search_db)
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
            return self._pending >= self._flush_every

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
            counts = _Counts()
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

    def _apply(self, chat_num: int, generation: int, pending: _Pending) -> _Counts:
        with self.db.transaction():
            record = self._load_chat(chat_num)
            if record is None or record.generation != generation or record.purged_at is not None:
                return _Counts()  # a stale generation's writes never reach the index
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

    def _rebuild(self, chat_num: int, record: ChatRecord) -> _Counts:
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

    def resync(self, chat_num: int) -> _Counts:
        """Rebuild one chat's documents from its file (or drop them if it is purged)."""
        with self._flush_lock, self.db.transaction():
            record = self._load_chat(chat_num)
            if record is None or record.purged_at is not None:
                return _Counts(removed=self.store.drop_chat(chat_num))
            return self._rebuild(chat_num, record)

    def _resync_or_remember(self, chat_num: int) -> _Counts:
        try:
            return self.resync(chat_num)
        except Exception:
            logger.warning("message index: chat #%s could not be rebuilt", chat_num, exc_info=True)
            with self._hints_lock:
                self._needs_resync.add(chat_num)
            return _Counts()

    def repair(self, *, full: bool = False) -> IndexRepair:
        """Catch up after crashes: rebuild chats leased by gone holders (all chats if ``full``)."""
        counts = _Counts()
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


def _report(counts: _Counts, *, chats: int, leases: int = 0) -> IndexRepair:
    return IndexRepair(
        chats_checked=chats,
        documents_added=counts.added,
        documents_updated=counts.updated,
        documents_removed=counts.removed,
        leases_released=leases,
    )


# ── fan-out ─────────────────────────────────────────────────────────


class SearchResultLike(Protocol):
    id: str
    content: str
    rank: float


def fanout_search(
    per_chat: Iterable[tuple[str, Sequence[SearchResultLike]]], query: str, limit: int
) -> list[ChatHit]:
    """Merge each chat's own top ``limit`` hits by rank and keep ``limit`` globally.

    Ranks come from each chat's own bm25 statistics, so the merge order is an approximation
    of the indexed path's; the set of hits is the same whenever ``limit`` covers them all.
    """
    found: list[tuple[float, str, str, str]] = []
    for chat_id, results in per_chat:
        for result in results:
            found.append((float(result.rank), chat_id, result.id, result.content))
    found.sort(key=lambda hit: hit[:3])
    top = found[:limit]
    match = phrase_query(query)
    texts = snippets([hit[3] for hit in top], match) if match else [hit[3] for hit in top]
    return [
        ChatHit(chat_id=chat_id, message_id=message_id, snippet=snippet, rank=rank)
        for (rank, chat_id, message_id, _), snippet in zip(top, texts, strict=True)
    ]
