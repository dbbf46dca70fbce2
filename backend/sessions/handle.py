"""Session: the handle of one conversation (one ``session_id``) in a ``Sessions`` file.

Its reads are :class:`backend.sessions.reads.SessionReads` (the base class); this module is
the write side and compaction. Writes follow one pipeline:

    compaction-id guard → validate → sanitise → strip reserved metadata (client writes)
    → encode (pure) → one transaction: catch up with foreign commits, write rows, publish event
    → after commit: deliver the event, then maybe auto-compact

Each write is one ``database.transaction()``; called inside a caller's transaction it joins it
(savepoint), so a caller can commit message writes together with its own tables and events fire
only once that outer transaction commits. Encoding happens before the transaction, so a
``TypeError`` for non-JSON input never leaves a transaction half-done.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from backend.clock import now_ms
from backend.sessions.compaction import CompactionFunction
from backend.sessions.encoding import EncodedMessage, encode_message
from backend.sessions.events import (
    AppendEvent,
    ClearEvent,
    CompactEvent,
    CompactionEvent,
    DeleteEvent,
    ImportEvent,
    UpdateEvent,
)
from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.reads import Message, SessionReads
from backend.sessions.records import (
    OMITTED,
    AppendResult,
    CompactResult,
    StoredCompaction,
    _Omitted,
)
from backend.sessions.sanitize import sanitize_message, strip_reserved_metadata, validate_message
from backend.sessions.store import NOT_INSERTED
from backend.storage import well_formed_text

if TYPE_CHECKING:
    from backend.sessions.feed import ChangeFeed
    from backend.sessions.store import SessionStore

logger = logging.getLogger("backend.sessions")

Source = Literal["server", "client"]
T = TypeVar("T")


class Session(SessionReads):
    """One conversation's messages. Obtain it from ``Sessions.session(id)``."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore,
        feed: ChangeFeed,
        reserved_metadata_keys: frozenset[str],
    ) -> None:
        super().__init__(session_id, store)
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

    def _write(self, work: Callable[..., T], *args: Any, appends: bool = False) -> T:
        """Run ``work(*args)`` as one write transaction (joining the caller's, if any).

        If the transaction this call opened fails, the session's cached state is dropped right
        here; inside a caller's transaction the store arms a rollback hook instead. (``args``
        rather than a closure: an append is one call less and one allocation less.)
        ``appends``: ``work`` begins with the store's ``insert`` under the active leaf
        (``SessionStore.begin_append``).
        """
        store = self._store
        if store.retired:  # the file was purged or replaced: nothing written here would last
            raise store.retired_error()
        db = self._db
        nested = db.in_transaction
        try:
            with db.transaction():
                if appends and store.folds_append_check:
                    store.begin_append(self._id, nested)
                else:
                    store.begin_write(self._id, nested)
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
        return self._write(self._append, encoded, parent_id, appends=parent_id is OMITTED)

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
            return AppendResult(True, encoded.message, stored_parent)
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
