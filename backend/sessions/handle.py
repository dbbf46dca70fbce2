"""Session: the handle of one conversation (one ``session_id``) in a ``Sessions`` file.

Every public read and write of the store. Writes follow one pipeline:

    compaction-id guard → validate → sanitise → strip reserved metadata (client writes)
    → encode (pure) → one transaction: catch up with foreign commits, write rows, publish event
    → after commit: deliver the event, then maybe auto-compact

Each write is one ``database.transaction()``; called inside a caller's transaction it joins it
(savepoint), so a caller can commit message writes together with its own tables and events fire
only once that outer transaction commits. Encoding happens before the transaction, so a
``TypeError`` for non-JSON input never leaves a transaction half-done.

Reads stream: ``history()`` walks a content-free path first, then loads content in windows of
at most ``HISTORY_WINDOW_ROWS`` rows / ``HISTORY_WINDOW_BYTES`` stored bytes, holding the
database lock only while a window is fetched. ``newest_first=True`` follows parent pointers one
row per message taken, so a consumer that stops early leaves older rows unread.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from backend.clock import now_ms
from backend.sessions.attachments import find_pointers
from backend.sessions.chunking import utf8_length
from backend.sessions.compaction import CompactionFunction
from backend.sessions.encoding import EncodedMessage, decode_content, encode_message
from backend.sessions.events import (
    AppendEvent,
    ClearEvent,
    CompactEvent,
    CompactionEvent,
    DeleteEvent,
    ImportEvent,
    UpdateEvent,
)
from backend.sessions.overlays import COMPACTION_PREFIX, collapse, overlay_message, plan_overlays
from backend.sessions.paths import MAX_PATH_DEPTH, PathRow
from backend.sessions.records import (
    OMITTED,
    AppendResult,
    CompactResult,
    RecentHistory,
    RowStat,
    SearchResult,
    StoredCompaction,
    StoredEntry,
    TreeEntry,
    _Omitted,
)
from backend.sessions.sanitize import sanitize_message, strip_reserved_metadata, validate_message
from backend.sessions.search import DEFAULT_SEARCH_LIMIT, check_limit, phrase_query
from backend.sessions.store import NOT_INSERTED
from backend.storage import well_formed_text

if TYPE_CHECKING:
    from backend.sessions.feed import ChangeFeed
    from backend.sessions.store import SessionStore

logger = logging.getLogger("backend.sessions")

HISTORY_WINDOW_ROWS = 50
TREE_WINDOW_ROWS = 200
HISTORY_WINDOW_BYTES = 4 * 1024 * 1024
NEWEST_FIRST_WINDOW_ROWS = 8
DEFAULT_BATCH_SIZE = 50
DEFAULT_BATCH_BYTES = 4 * 1024 * 1024

Message = dict[str, Any]
Source = Literal["server", "client"]
T = TypeVar("T")


class Session:
    """One conversation's messages. Obtain it from ``Sessions.session(id)``."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore,
        feed: ChangeFeed,
        reserved_metadata_keys: frozenset[str],
    ) -> None:
        self._id = session_id
        self._store = store
        self._db = store.db
        self._feed = feed
        self._reserved = reserved_metadata_keys
        self._compaction_fn: CompactionFunction | None = None
        self._compact_after: int | None = None

    @property
    def id(self) -> str:
        return self._id

    def __repr__(self) -> str:
        return f"Session({self._id!r})"

    # ── write pipeline ──────────────────────────────────────────────

    def _write(self, work: Callable[..., T], *args: Any) -> T:
        """Run ``work(*args)`` as one write transaction (joining the caller's, if any).

        If the transaction this call opened fails, the session's cached state is dropped right
        here; inside a caller's transaction the store arms a rollback hook instead. (``args``
        rather than a closure: an append is one call less and one allocation less.)
        """
        store = self._store
        if store.retired:  # the file was purged or replaced: nothing written here would last
            raise store.retired_error()
        db = self._db
        nested = db.in_transaction
        try:
            with db.transaction():
                self._store.begin_write(self._id, nested)
                return work(*args)
        except BaseException:
            self._store.forget(self._id)
            raise

    def _prepare(self, message: Message, source: Source) -> EncodedMessage:
        if source not in ("server", "client"):
            raise ValueError(f"source must be 'server' or 'client', not {source!r}")
        prepared = sanitize_message(message)
        if source == "client":
            prepared = strip_reserved_metadata(prepared, self._reserved)
        return encode_message(prepared)

    def _resolve_parent(self, parent_id: str | _Omitted | None) -> str | None:
        """Omitted → active leaf; None/"" → root; an id of this session → it; else → root."""
        if parent_id is OMITTED:
            return self._store.leaf_id(self._id)
        if not parent_id:
            return None
        if not isinstance(parent_id, str):
            raise TypeError(f"parent_id must be a string or None, not {type(parent_id).__name__}")
        store = self._store
        if parent_id == store.leaf_id(self._id) or store.rows.exists(self._id, parent_id):
            return parent_id
        return None

    def append_message(
        self,
        message: Message,
        *,
        parent_id: str | _Omitted | None = OMITTED,
        source: Source = "server",
    ) -> AppendResult:
        """Add a message (as a child of the active leaf unless ``parent_id`` says otherwise).

        An existing id writes nothing and returns the stored message (``inserted=False``);
        an overlay id (``compaction_*``) is refused the same way, without an event.
        """
        if validate_message(message).startswith(COMPACTION_PREFIX):
            return AppendResult(False, message)
        encoded = self._prepare(message, source)
        return self._write(self._append, encoded, parent_id)

    def _append(self, encoded: EncodedMessage, parent_id: str | _Omitted | None) -> AppendResult:
        store = self._store
        # OMITTED goes through: the store resolves it to the active leaf from the tail it
        # looks up anyway.
        parent = parent_id if parent_id is OMITTED else self._resolve_parent(parent_id)
        stored_parent = store.insert(self._id, encoded, parent, now_ms())
        if stored_parent is not NOT_INSERTED:
            if self._feed.has_listeners:
                self._feed.publish(AppendEvent(self._id, encoded.message, stored_parent, True))
            if self._compaction_fn is not None and self._compact_after is not None:
                self._db.after_commit(self._auto_compact)
            return AppendResult(True, encoded.message)
        found = self._store.rows.load_row(self._id, encoded.id)
        stored, stored_parent = found if found is not None else (None, None)
        message = stored if stored is not None else encoded.message
        self._feed.publish(AppendEvent(self._id, message, stored_parent, False))
        return AppendResult(False, message)

    def update_message(self, message: Message, *, source: Source = "server") -> Message | None:
        """Replace a stored message's content; None (nothing written) when the id is absent.

        An update that leaves the stored form unchanged writes nothing and emits nothing.
        Parent and position never change.
        """
        if validate_message(message).startswith(COMPACTION_PREFIX):
            return None
        encoded = self._prepare(message, source)
        return self._write(lambda: self._update(encoded))

    def _update(self, encoded: EncodedMessage) -> Message | None:
        previous = self._store.rows.stored_row(self._id, encoded.id)
        if previous is None:
            return None
        if previous.digest == encoded.digest:
            return encoded.message
        if previous.digest is None:
            # A row written before digests existed: compare the full content, once.
            stored = self._store.rows.stored_content(self._id, encoded.id, previous.chunks)
            if stored == encoded.content:
                self._store.stamp_digest(self._id, encoded.id, encoded.digest)
                return encoded.message
        self._store.replace(self._id, encoded, previous)
        self._feed.publish(UpdateEvent(self._id, encoded.message))
        return encoded.message

    def upsert_message(
        self,
        message: Message,
        *,
        parent_id: str | _Omitted | None = OMITTED,
        source: Source = "server",
    ) -> AppendResult:
        """Append a new id, update an existing one (``parent_id`` is ignored for it)."""
        if validate_message(message).startswith(COMPACTION_PREFIX):
            return AppendResult(False, message)
        encoded = self._prepare(message, source)

        def upsert() -> AppendResult:
            if not self._store.rows.exists(self._id, encoded.id):
                return self._append(encoded, parent_id)
            updated = self._update(encoded)
            return AppendResult(False, updated if updated is not None else encoded.message)

        return self._write(upsert)

    def import_message(self, message: Message, *, parent_id: str | None, created_at: int) -> None:
        """Write one historical message verbatim: explicit parent (not checked) and timestamp.

        No sanitising, no reserved-key stripping, overlay ids allowed; chunking and attachment
        extraction as usual. An existing id writes nothing. Emits ``import``, never ``append``,
        and never auto-compacts.
        """
        validate_message(message)
        if parent_id is not None and not isinstance(parent_id, str):
            raise TypeError("parent_id must be a string or None")
        if isinstance(created_at, bool) or not isinstance(created_at, int):
            raise TypeError("created_at is integer milliseconds")
        encoded = encode_message(message)

        def insert() -> None:
            stored = self._store.insert(self._id, encoded, parent_id, created_at, keep_memo=False)
            if stored is not NOT_INSERTED:
                self._feed.publish(ImportEvent(self._id, encoded.message, parent_id))

        self._write(insert)

    def delete_messages(self, ids: Iterable[str]) -> None:
        """Delete messages; their surviving children move to the nearest surviving ancestor."""
        if isinstance(ids, str):
            raise TypeError("delete_messages takes a collection of ids, not one string")
        unique = tuple(dict.fromkeys(ids))
        if not unique:
            return

        def delete() -> None:
            self._store.delete(self._id, unique)
            self._feed.publish(DeleteEvent(self._id, unique))

        self._write(delete)

    def clear_messages(self) -> None:
        """Delete every message, continuation, compaction and attachment reference."""

        def clear() -> None:
            self._store.clear(self._id)
            self._feed.publish(ClearEvent(self._id))

        self._write(clear)

    # ── reads ───────────────────────────────────────────────────────

    def _leaf(self, leaf_id: str | None) -> str | None:
        self._store.refresh(self._id)
        return leaf_id if leaf_id is not None else self._store.leaf_id(self._id)

    def history(
        self, *, leaf_id: str | None = None, newest_first: bool = False
    ) -> Iterator[Message]:
        """Stream the root-to-leaf path (or leaf-to-root) with overlays applied."""
        if newest_first:
            return self._history_newest_first(leaf_id)
        return self._history_oldest_first(leaf_id)

    def _history_oldest_first(self, leaf_id: str | None) -> Iterator[Message]:
        with self._db.lock:
            path = self._store.paths.path(self._id, self._leaf(leaf_id))
            compactions = list(self._store.compactions.load(self._id))
        entries = collapse(path.rows, plan_overlays([row.id for row in path.rows], compactions))
        del path
        window: list[PathRow | StoredCompaction] = []
        rows = 0
        stored_bytes = 0
        for entry in entries:
            if isinstance(entry, PathRow):
                # A window holds at most 50 rows and 4 MiB; an oversized row stands alone.
                if rows and (
                    rows >= HISTORY_WINDOW_ROWS or stored_bytes + entry.bytes > HISTORY_WINDOW_BYTES
                ):
                    yield from self._hydrate(window)
                    window, rows, stored_bytes = [], 0, 0
                rows += 1
                stored_bytes += entry.bytes
            window.append(entry)
        yield from self._hydrate(window)

    def _hydrate(self, entries: Sequence[str | PathRow | StoredCompaction]) -> Iterator[Message]:
        """Messages of ``entries`` (rows, row ids, overlays) in order, loaded with one query;
        rows that vanished or do not parse are skipped."""
        ids = [
            entry if isinstance(entry, str) else entry.id
            for entry in entries
            if not isinstance(entry, StoredCompaction)
        ]
        contents = self._store.rows.load_contents(self._id, ids) if ids else {}
        for entry in entries:
            if isinstance(entry, StoredCompaction):
                yield overlay_message(entry)
                continue
            content = contents.pop(entry if isinstance(entry, str) else entry.id, None)
            if content is None:
                continue
            message = self._store.rows.decode(content)
            del content  # earlier windows, and this row's text, are never retained
            if message is not None:
                yield message

    def _history_newest_first(self, leaf_id: str | None) -> Iterator[Message]:
        with self._db.lock:
            current = self._leaf(leaf_id)
            compactions = list(self._store.compactions.load(self._id))
            hidden = self._store.compactions.hidden_ids(self._id)
        span_ends = {c.to_message_id for c in compactions}
        walked = 0
        seen: set[str] = set()
        while current is not None and walked <= MAX_PATH_DEPTH and current not in seen:
            if current in span_ends and current not in hidden:
                # An overlay may end here: plan over the remaining prefix, stream it backwards.
                yield from self._prefix_newest_first(
                    current, MAX_PATH_DEPTH - walked, compactions, hidden
                )
                return
            found = self._store.rows.load_row(self._id, current)
            if found is None:
                return
            walked += 1
            seen.add(current)
            message, parent_id = found
            if message is not None and current not in hidden:
                yield message
            current = parent_id

    def _prefix_newest_first(
        self,
        start_id: str,
        cap: int,
        compactions: list[StoredCompaction],
        hidden: frozenset[str],
    ) -> Iterator[Message]:
        ids = [i for i in self._store.paths.path_ids(self._id, start_id, cap) if i not in hidden]
        entries = collapse(ids, plan_overlays(ids, compactions))
        window: list[str | StoredCompaction] = []
        rows = 0
        for entry in reversed(entries):
            if isinstance(entry, str):
                if rows >= NEWEST_FIRST_WINDOW_ROWS:
                    yield from self._hydrate(window)
                    window, rows = [], 0
                rows += 1
            window.append(entry)
        yield from self._hydrate(window)

    def history_batches(
        self,
        *,
        leaf_id: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> Iterator[list[Message]]:
        """``history()`` in non-empty batches bounded by count and serialised JSON bytes."""
        size_limit = max(1, int(batch_size))
        byte_limit = max(1, int(max_batch_bytes))
        batch: list[Message] = []
        batch_bytes = 0
        for message in self.history(leaf_id=leaf_id):
            size = utf8_length(json.dumps(message, ensure_ascii=False, separators=(",", ":")))
            if batch and (len(batch) >= size_limit or batch_bytes + size > byte_limit):
                yield batch
                batch, batch_bytes = [], 0
            batch.append(message)
            batch_bytes += size
            if len(batch) >= size_limit or batch_bytes >= byte_limit:
                yield batch
                batch, batch_bytes = [], 0
        if batch:
            yield batch

    def get_history(self, *, leaf_id: str | None = None) -> list[Message]:
        """The whole path as a list. Prefer ``history()`` for unbounded transcripts."""
        return list(self.history(leaf_id=leaf_id))

    def get_recent_history(
        self, max_content_bytes: int, *, leaf_id: str | None = None
    ) -> RecentHistory:
        """The longest recent suffix whose stored bytes fit the budget; always the leaf."""
        with self._db.lock:
            path = self._store.paths.path(self._id, self._leaf(leaf_id))
            compactions = list(self._store.compactions.load(self._id))
        rows = path.rows
        if not rows:
            return RecentHistory([], False, 0)
        start = len(rows) - 1
        used = rows[start].bytes
        while start > 0 and used + rows[start - 1].bytes <= max_content_bytes:
            start -= 1
            used += rows[start].bytes
        window = rows[start:]
        entries = collapse(window, plan_overlays([row.id for row in window], compactions))
        messages: list[Message] = []
        for index in range(0, len(entries), HISTORY_WINDOW_ROWS):
            messages.extend(self._hydrate(entries[index : index + HISTORY_WINDOW_ROWS]))
        return RecentHistory(messages, start > 0 or path.capped, sum(row.bytes for row in rows))

    def get_history_row_stats(self, leaf_id: str | None = None) -> list[RowStat]:
        """Per-row stored bytes and token estimates of the path, without loading content."""
        with self._db.lock:
            path = self._store.paths.path(self._id, self._leaf(leaf_id))
        return [
            RowStat(row.id, row.role, row.bytes, row.token_estimate, row.created_at)
            for row in path.rows
        ]

    def get_message(self, message_id: str) -> Message | None:
        """One stored message by id; None if absent or unreadable."""
        return self._store.rows.load_message(self._id, message_id)

    def get_latest_leaf(self) -> Message | None:
        """The active leaf's message (an overlay echo row yields to its nearest visible parent)."""
        with self._db.lock:
            leaf = self._leaf(None)
            hidden = self._store.compactions.hidden_ids(self._id)
            seen: set[str] = set()
            while leaf is not None and leaf in hidden and leaf not in seen:
                seen.add(leaf)
                found = self._store.rows.load_row(self._id, leaf)
                leaf = None if found is None else found[1]
            return None if leaf is None else self._store.rows.load_message(self._id, leaf)

    def get_branches(self, message_id: str | None) -> list[Message]:
        """The children of ``message_id`` in insertion order (overlay echoes replaced by theirs).

        ``None`` lists the roots: editing a conversation's first message makes a sibling root.
        """
        with self._db.lock:
            self._store.refresh(self._id)
            hidden = self._store.compactions.hidden_ids(self._id)
            children: list[tuple[str, int]] = []
            pending: list[str | None] = [message_id]
            seen: set[str | None] = set()
            while pending:
                parent = pending.pop()
                if parent in seen:
                    continue
                seen.add(parent)
                for child_id, seq in self._store.paths.children(self._id, parent):
                    if child_id in hidden:
                        pending.append(child_id)
                    else:
                        children.append((child_id, seq))
        children.sort(key=lambda child: child[1])
        ids = [child_id for child_id, _ in children]
        contents = self._store.rows.load_contents(self._id, ids) if ids else {}
        branches = []
        for child_id in ids:
            content = contents.get(child_id)
            message = self._store.rows.decode(content) if content is not None else None
            if message is not None:
                branches.append(message)
        return branches

    def tree(self) -> Iterator[TreeEntry]:
        """Every stored row, every branch, in insertion order (what an export needs).

        Unlike ``history()`` nothing is hidden or overlaid: overlay echo rows are rows too.
        Importing the entries in this order (``import_message``) rebuilds the same tree,
        sibling order and active leaf.
        """
        for _, content, parent_id, created_at in self._stored_rows():
            message = self._store.rows.decode(content)
            if message is not None:
                yield TreeEntry(message, parent_id, created_at)

    def stored_tree(self) -> Iterator[StoredEntry]:
        """``tree()`` in stored form: each row's JSON text as written, attachments as pointers.

        What a lossless export writes (no decode, no re-encode); fetch the bytes behind the
        pointers with :meth:`load_attachments`.
        """
        for message_id, content, parent_id, created_at in self._stored_rows():
            if decode_content(content) is not None:  # the rule of tree(): unreadable rows skip
                hashes = frozenset(find_pointers(content))
                yield StoredEntry(message_id, content, parent_id, created_at, hashes)

    def _stored_rows(self) -> Iterator[tuple[str, str, str | None, int]]:
        """``(id, stored JSON, parent_id, created_at)`` of every row in ``seq`` order.

        Ids are read first (small), contents in windows of ``TREE_WINDOW_ROWS``; a row
        deleted meanwhile is skipped.
        """
        with self._db.lock:
            self._store.refresh(self._id)
            rows = self._store.paths.tree_rows(self._id)
        for start in range(0, len(rows), TREE_WINDOW_ROWS):
            window = rows[start : start + TREE_WINDOW_ROWS]
            with self._db.lock:
                contents = self._store.rows.load_contents(self._id, [row[0] for row in window])
            for message_id, parent_id, created_at in window:
                content = contents.pop(message_id, None)
                if content is not None:
                    yield message_id, content, parent_id, created_at

    def load_attachments(self, hashes: Iterable[str]) -> dict[str, tuple[bytes, str]]:
        """``{hash: (bytes, media_type)}`` of the attachments this file holds among ``hashes``."""
        wanted = set(hashes)
        if not wanted:
            return {}
        with self._db.lock:
            return self._store.attachments.load_payloads(wanted)

    def search(self, query: str, *, limit: int | None = DEFAULT_SEARCH_LIMIT) -> list[SearchResult]:
        """Messages whose text contains ``query`` as a phrase, best rank first.

        The first search of a file builds the index (one-time backfill of every message);
        from then on every write maintains it. Any string is a safe query; only its first
        words count (the query rule of ``backend.sessions.search``).
        """
        limit = check_limit(limit, DEFAULT_SEARCH_LIMIT)
        match = phrase_query(query)
        if match is None or limit < 1:
            return []
        with self._db.lock:
            self._store.refresh(self._id)
            if not self._store.index.exists:
                with self._db.transaction():
                    self._store.index.ensure()
            return self._store.index.search(self._id, match, limit)

    def token_estimate(self) -> int:
        """Estimated tokens of the active path, overlays applied (memoised per leaf)."""
        with self._db.lock:
            self._store.refresh(self._id)
            return self._store.token_estimate(self._id)

    # ── compaction ──────────────────────────────────────────────────

    def add_compaction(
        self, summary: str, from_message_id: str, to_message_id: str
    ) -> StoredCompaction:
        """Store an overlay replacing ``from..to`` on reads (ids are not checked)."""
        if not all(isinstance(v, str) for v in (summary, from_message_id, to_message_id)):
            raise TypeError("summary and message ids are strings")
        compaction = StoredCompaction(  # the summary is stored by the storage text rule
            str(uuid.uuid4()), well_formed_text(summary), from_message_id, to_message_id, now_ms()
        )

        def add() -> None:
            self._store.add_compaction(self._id, compaction)
            self._feed.publish(CompactionEvent(self._id, compaction))

        self._write(add)
        return compaction

    def import_compaction(self, compaction: StoredCompaction) -> bool:
        """Store a historical overlay verbatim (its id and time); False if the id exists.

        The import twin of ``add_compaction`` (ids are not checked, as there): emits
        ``compaction``.
        """
        if not isinstance(compaction, StoredCompaction):
            raise TypeError("import_compaction takes a StoredCompaction")
        if isinstance(compaction.created_at, bool) or not isinstance(compaction.created_at, int):
            raise TypeError("created_at is integer milliseconds")
        stored = StoredCompaction(
            compaction.id,
            well_formed_text(compaction.summary),
            compaction.from_message_id,
            compaction.to_message_id,
            compaction.created_at,
        )

        def add() -> bool:
            if any(c.id == stored.id for c in self._store.compactions.load(self._id)):
                return False
            self._store.add_compaction(self._id, stored)
            self._feed.publish(CompactionEvent(self._id, stored))
            return True

        return self._write(add)

    def get_compactions(self) -> list[StoredCompaction]:
        """Every overlay of this session, oldest first."""
        with self._db.lock:
            self._store.refresh(self._id)
            return list(self._store.compactions.load(self._id))

    def on_compaction(self, fn: CompactionFunction) -> Session:
        """Register the function ``compact()`` calls (see ``create_compact_function``)."""
        self._compaction_fn = fn
        return self

    def compact_after(self, tokens: int) -> Session:
        """Auto-compact after an inserted append once the estimate is strictly above ``tokens``."""
        self._compact_after = int(tokens)
        return self

    def compact(self, leaf_id: str | None = None) -> CompactResult | None:
        """Summarise part of a branch with the registered function and store it as an overlay.

        A range that extends an overlay already visible on this branch is widened to start where
        that overlay starts, so the newest overlay supersedes it. A failing function is logged
        and gives None; nothing is stored.
        """
        fn = self._compaction_fn
        if fn is None:
            raise RuntimeError("No compaction function registered. Call on_compaction() first.")
        history = self.get_history(leaf_id=leaf_id)
        try:
            result = fn(history)
        except Exception:
            logger.warning("compaction of session %r failed", self._id, exc_info=True)
            return None
        if result is None:
            return None
        visible = {message["id"] for message in history}
        if result.to_message_id not in visible:
            return None
        summary = well_formed_text(result.summary)  # a model's text: see add_compaction

        def store() -> str:
            extended = [
                c
                for c in self._store.compactions.load(self._id)
                if COMPACTION_PREFIX + c.id in visible
                or (c.from_message_id in visible and c.to_message_id in visible)
            ]
            from_id = extended[0].from_message_id if extended else result.from_message_id
            compaction = StoredCompaction(
                str(uuid.uuid4()), summary, from_id, result.to_message_id, now_ms()
            )
            self._store.add_compaction(self._id, compaction)
            self._feed.publish(CompactEvent(self._id, compaction))
            return from_id

        from_id = self._write(store)
        return CompactResult(from_id, result.to_message_id, summary)

    def _auto_compact(self) -> None:
        """After a committed insert: compact if the estimate is strictly above the threshold."""
        threshold = self._compact_after
        if self._compaction_fn is None or threshold is None:
            return
        try:
            if self.token_estimate() > threshold:
                self.compact()
        except Exception:  # auto-compaction is best effort: the append already committed
            logger.warning("auto-compaction of session %r failed", self._id, exc_info=True)
