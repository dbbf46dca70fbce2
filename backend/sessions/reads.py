"""SessionReads: the read side of a conversation handle (``Session`` is its write side).

Everything here only reads: the path from the root to a leaf (overlays applied), branches and
the active leaf, every stored row for an export, search, token estimates. ``Session`` extends
this class with the write pipeline and compaction, so a read never depends on a write.

Reads stream: ``history()`` walks a content-free path first, then loads content in windows of
at most ``HISTORY_WINDOW_ROWS`` rows / ``HISTORY_WINDOW_BYTES`` stored bytes, holding the
database lock only while a window is fetched. ``newest_first=True`` follows parent pointers one
row per message taken, so a consumer that stops early leaves older rows unread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from backend.sessions.attachments import find_pointers
from backend.sessions.chunking import utf8_length
from backend.sessions.encoding import decode_content
from backend.sessions.overlays import collapse, overlay_message, plan_overlays
from backend.sessions.paths import MAX_PATH_DEPTH, PathRow
from backend.sessions.records import (
    RecentHistory,
    RowStat,
    StoredCompaction,
    StoredEntry,
    TreeEntry,
)
from backend.sessions.search import DEFAULT_SEARCH_LIMIT, check_limit, phrase_query

if TYPE_CHECKING:
    from backend.sessions.records import SearchResult
    from backend.sessions.store import SessionStore

HISTORY_WINDOW_ROWS = 50
TREE_WINDOW_ROWS = 200
HISTORY_WINDOW_BYTES = 4 * 1024 * 1024
NEWEST_FIRST_WINDOW_ROWS = 8
DEFAULT_BATCH_SIZE = 50
DEFAULT_BATCH_BYTES = 4 * 1024 * 1024

Message = dict[str, Any]


class SessionReads:
    """Every read of one conversation (``session_id``) of a file; the base of ``Session``."""

    def __init__(self, session_id: str, store: SessionStore) -> None:
        self._id = session_id
        self._store = store
        self._db = store.db

    # ── the path ────────────────────────────────────────────────────

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

    # ── one message, the leaf, branches ─────────────────────────────

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

    # ── every row, for an export ────────────────────────────────────

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

    # ── search and estimates ────────────────────────────────────────

    def search(self, query: str, *, limit: int | None = DEFAULT_SEARCH_LIMIT) -> list[SearchResult]:
        """Messages whose text contains ``query`` as a phrase, best rank first.

        The first search of a file builds the index (one-time backfill of every message);
        from then on every write maintains it. Any string is a safe query; only its first
        words count (the query rule of ``backend.sessions.search``).
        """
        limit = check_limit(limit, DEFAULT_SEARCH_LIMIT)
        match = phrase_query(query)
        return [] if match is None else self.search_match(match, limit=limit)

    def search_match(
        self, match: str, *, limit: int | None = DEFAULT_SEARCH_LIMIT
    ) -> list[SearchResult]:
        """Messages matching ``match``, an FTS5 query built by ``backend.sessions.search`` or
        ``backend.sessions.search_terms`` (never user input), best rank first."""
        limit = check_limit(limit, DEFAULT_SEARCH_LIMIT)
        if limit < 1:
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
