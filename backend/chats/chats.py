"""``Chats``: the directory of one user or workspace, and the ``Chat`` handles it gives out.

This module composes the stores over one ``directory.sqlite`` and one ``backend.sessions``
file per chat (``backend.chats.layout``) and is the one public surface over them. Its parts,
each in its own module: a chat's life (:mod:`~backend.chats.lifecycle`), the removal of files
(:mod:`~backend.chats.purge`), the open chat files (:mod:`~backend.chats.chat_files`), message
search (:mod:`~backend.chats.message_search`), shared memory
(:mod:`~backend.chats.shared_memory`), pins and temporary chats
(:mod:`~backend.chats.marked_chats`), imports and forks. On PostgreSQL the same files are
scopes named as them (:mod:`backend.chats.directory_storage`) and each store runs its twin.

Open chat files: ``Chat.session`` opens the chat's file once and caches it (LRU,
``max_open_chats``); **hold the Chat** (not only ``chat.session``) for as long as you use the
session (:mod:`backend.chats.chat_files`).

Trust boundary: every public method is safe to expose to a client **except**
``record_chat_turn``, which is child → parent (the conversation runtime reports a finished
reply); a UI must not offer it, or a client could forge sidebar entries. ``create_chat``'s
``chat_id`` argument is for server-side restores; clients get server-minted ids.
``share_attachments`` is the fork's step (it takes a loader, no client value).

Concurrency: all methods are synchronous and thread-safe (async callers offload). Lock order
is ``Database`` locks only; the open-chat cache's lock is a leaf, never held while touching a
file.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import cached_property
from pathlib import Path

from backend.chats.archive_policy import AutoArchive
from backend.chats.attachment_pool import AttachmentPool
from backend.chats.chat_files import Chat, OpenChatFiles
from backend.chats.chat_records import ChatRecord
from backend.chats.directory_storage import (
    DirectoryScopes,
    chat_files_for,
    directory_storage,
    record_store_for,
    twin_of,
)
from backend.chats.events import DirectoryEvent, DirectoryListener, EventBus
from backend.chats.fork import fork_chat
from backend.chats.ids import ChatIds
from backend.chats.imports import ChatImports
from backend.chats.index import MessageIndex
from backend.chats.layout import DirectoryLayout
from backend.chats.lifecycle import ChatLifecycle, Clock, TitleGenerator
from backend.chats.marked_chats import open_marks
from backend.chats.message_search import MessageSearch
from backend.chats.parts import DirectoryParts
from backend.chats.purge import ChatPurger
from backend.chats.shared import SharedContextStore
from backend.chats.shared_memory import SharedMemory
from backend.chats.sidebar import SidebarPage, read_sidebar_page
from backend.chats.temporary import DEFAULT_TEMPORARY_GRACE_S, DEFAULT_TEMPORARY_LIFETIME_S
from backend.chats.text import prefix_query
from backend.chats.values import ChatCursor, ChatHit, ChatSummary, IndexRepair, as_cursor
from backend.chats.watch import ForeignChangeWatcher
from backend.clock import now_ms
from backend.config import (
    DEFAULT_SOFT_DELETE_WINDOW_S,
    PostgresLocation,
    Settings,
    StorageChoice,
)
from backend.errors import InvalidInputError, StorageError
from backend.sessions import AttachmentLoader
from backend.sessions.search import check_limit
from backend.sessions.search_terms import exact_first, title_tiers
from backend.storage import Database
from backend.storage.closing import Closing

DEFAULT_LIST_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 20
DEFAULT_MAX_OPEN_CHATS = 64


class Chats(Closing):
    """The directory of one user / workspace (see the module docstring)."""

    def __init__(
        self,
        root: str | Path,
        directory_id: str,
        *,
        soft_delete_window_s: float = DEFAULT_SOFT_DELETE_WINDOW_S,
        generate_title: TitleGenerator | None = None,
        clock: Clock | None = None,
        max_open_chats: int = DEFAULT_MAX_OPEN_CHATS,
        reserved_metadata_keys: tuple[str, ...] = (),
        storage: StorageChoice | None = None,
        temporary_lifetime_s: float = DEFAULT_TEMPORARY_LIFETIME_S,
        temporary_grace_s: float = DEFAULT_TEMPORARY_GRACE_S,
        listeners: Collection[DirectoryListener] = (),
    ) -> None:
        """``storage``: the engine, which must be ``CHATS_STORAGE``'s (the default);
        ``temporary_*``: how long a temporary chat lives at most, and outlives its last window;
        ``listeners``: subscribed before the opening sweep, so they hear the chats it purges."""
        if soft_delete_window_s < 0:
            raise ValueError("soft_delete_window_s must not be negative")
        if max_open_chats < 1:
            raise ValueError("max_open_chats must be at least 1")
        storage = directory_storage(storage)
        on_disk = not isinstance(storage, PostgresLocation)
        self.layout = DirectoryLayout(root, directory_id, on_disk=on_disk)
        self.layout.ensure_folders()
        # Searches read through a scope of their own (SQLite WAL: readers never block the
        # writer), so a long search never holds up create_chat or a flush on the writer; so
        # do the shared attachments, whose lock is a leaf: a chat file asks for them while it
        # holds its own lock (backend.chats.directory_storage).
        self._scopes = DirectoryScopes.open(storage, self.layout.database_path)
        self.database = self._scopes.database
        self._clock = clock or now_ms
        self._window_ms = int(soft_delete_window_s * 1000)
        self._reserved = tuple(reserved_metadata_keys)
        self._events = EventBus()
        self._closed = False
        try:
            search = self._scopes.search
            self._records = record_store_for(self.database, search)
            self._ids = ChatIds(self._records.id_key())
            self._index = MessageIndex(
                self.database,
                search_db=search,
                load_chat=self._records.load_num,
                path_of=self._path_of,
                unpurged_chats=lambda: [num for num, _, _ in self._records.unpurged_chats()],
                foreign_commits=self._foreign_commits,
                clock=self._clock,
            )
            self._pool = twin_of(AttachmentPool, self.database)(
                self.database, reader=self._scopes.pool_reader
            )
            self._files = chat_files_for(self.database, self.layout)
            parts = DirectoryParts(
                self.database, self._records, self._index, self.layout, self._pool, self._files
            )
            self._open = OpenChatFiles(
                parts,
                max_open=max_open_chats,
                reserved_metadata_keys=self._reserved,
                check_open=self._check_open,
            )
            self._search = MessageSearch(parts, reserved_metadata_keys=self._reserved)
            self._shared = SharedMemory(
                self.database,
                twin_of(SharedContextStore, self.database)(self.database, search),
                directory_id=self.directory_id,
                emit_after_commit=self._emit_after_commit,
                clock=self._clock,
            )
            self._purger = ChatPurger(
                parts,
                self._open,
                window_ms=self._window_ms,
                directory_id=self.directory_id,
                emit_after_commit=self._emit_after_commit,
            )
            self._lifecycle = ChatLifecycle(
                parts,
                self._ids,
                self._purger,
                directory_id=self.directory_id,
                emit_after_commit=self._emit_after_commit,
                generate_title=generate_title,
                clock=self._clock,
            )
            # ``pins``: pin and unpin chats; ``temporary``: temporary chats (issue 29).
            self.pins, self.temporary = open_marks(
                parts,
                self._lifecycle,
                self._purger,
                directory_id=self.directory_id,
                emit_after_commit=self._emit_after_commit,
                clock=self._clock,
                lifetime_s=temporary_lifetime_s,
                grace_s=temporary_grace_s,
            )
            self._auto_archive = AutoArchive(self.database, self._records, self._lifecycle.archive)
            self._watcher = ForeignChangeWatcher(
                self.database, self._records, self.directory_id, self._events.emit
            )
            self._events.on_first, self._events.on_last = self._watcher.start, self._watcher.stop
            for listener in listeners:
                self._events.subscribe(listener)
            self.sweep()
            self._purger.remove_stale_files()
            self._index.repair()
            self._auto_archive.run(self._clock())
            # Those passes read pages an idle person's tabs never need again; the directory
            # stays open while any tab of theirs is connected.
            if isinstance(self.database, Database):
                self.database.release_memory()
        except BaseException:
            self._scopes.close()
            raise

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        directory_id: str | None = None,
        listeners: Collection[DirectoryListener] = (),
    ) -> Chats:
        """The directory of ``directory_id`` (default: the configured user) under the storage
        root: the data folder, or on PostgreSQL the fixed root every node names alike."""
        return cls(
            settings.storage_root,
            directory_id or settings.user_id,
            soft_delete_window_s=settings.soft_delete_window_s,
            storage=settings.storage,
            temporary_lifetime_s=settings.temporary_chat_ttl_s,
            temporary_grace_s=settings.temporary_chat_grace_s,
            listeners=listeners,
        )

    @property
    def directory_id(self) -> str:
        return self.layout.directory_id

    # ── chat index ──────────────────────────────────────────────────

    def create_chat(self, title: str | None = None, *, chat_id: str | None = None) -> ChatSummary:
        """Create a chat (server-minted id); ``title=None`` uses ``generate_title`` or the default.

        ``chat_id`` (server-side only) re-creates a deleted id as a fresh generation; a live
        id is a ``ConflictError``.
        """
        self._check_open()
        summary = self._lifecycle.create(title, chat_id)
        self.sweep()
        return summary

    def list_chats(
        self,
        *,
        limit: int | None = DEFAULT_LIST_LIMIT,
        before: int | ChatCursor | tuple[int, str] | None = None,
        search: str | None = None,
        archived: bool = False,
    ) -> list[ChatSummary]:
        """Live chats, newest ``updated_at`` first: the main list, or the archived one.

        ``before`` is a cursor: an ``updated_at`` (the RFC's; rows tying with it are skipped)
        or a tie-stable ``ChatCursor`` / ``summary.cursor`` / ``(updated_at, id)``.
        ``search`` keeps chats whose title matches (every word, the last as a prefix); a blank
        ``search`` is no filter. Archived chats are left out, unless ``archived``, which lists
        them alone.
        """
        self._check_open()
        limit = _check_limit(limit, DEFAULT_LIST_LIMIT)
        cursor = as_cursor(before)
        if search is not None and not isinstance(search, str):
            raise TypeError("search must be a string")
        if not isinstance(archived, bool):
            raise TypeError("archived must be a bool")
        if search is None or not search.strip():
            return self._records.list_live(limit, cursor, archived=archived)
        match = prefix_query(search)
        if match is None:
            return []
        return self._records.list_live(limit, cursor, match, archived=archived)

    def sidebar_page(self, *, with_archived: bool = False) -> SidebarPage:
        """What the shared sidebar shows, in one call (``backend.chats.sidebar``)."""
        return read_sidebar_page(self, self.pins, with_archived=with_archived)

    def get_summary(self, chat_id: str) -> ChatSummary:
        """The sidebar row of a live chat."""
        self._check_open()
        return self._lifecycle.load_live(chat_id).summary()

    def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        """Set a trimmed, non-blank title (children never learn of it: RFC edge case 5)."""
        self._check_open()
        return self._lifecycle.rename(chat_id, title)

    def delete_chat(self, chat_id: str) -> None:
        """Soft-delete: gone from every list and search at once; idempotent."""
        self._check_open()
        self._lifecycle.delete(chat_id)
        self.sweep()

    def restore_chat(self, chat_id: str) -> ChatSummary:
        """Undo a delete within the soft-delete window (same generation, same file)."""
        self._check_open()
        return self._lifecycle.restore(chat_id)

    def archive_chat(self, chat_id: str) -> ChatSummary:
        """Move a chat from the main list to the archived one; idempotent.

        The chat stays live: it opens, answers, and is found by every search (its summary's
        ``archived_at`` says it is archived).
        """
        self._check_open()
        return self._lifecycle.archive(chat_id)

    def unarchive_chat(self, chat_id: str) -> ChatSummary:
        """Bring an archived chat back to the main list; idempotent."""
        self._check_open()
        return self._lifecycle.unarchive(chat_id)

    def auto_archive_days(self) -> int | None:
        """The user's "archive chats untouched for N days" setting (``None``: off)."""
        self._check_open()
        return self._auto_archive.days()

    def set_auto_archive_days(self, days: int | None) -> list[str]:
        """Set (or turn off, ``None``) the policy, and apply it now; the ids it archived.

        ``days`` must be a whole number from 1 to 3650 (``InvalidInputError``, nothing saved).
        """
        self._check_open()
        self._auto_archive.set_days(days)
        return self.archive_untouched()

    def archive_untouched(self, *, now_ms: int | None = None) -> list[str]:
        """One pass of the policy (nothing when it is off); the ids it archived."""
        self._check_open()
        return self._auto_archive.run(self._clock() if now_ms is None else now_ms)

    def search_chats(
        self, query: str, *, limit: int | None = DEFAULT_LIST_LIMIT
    ) -> list[ChatSummary]:
        """Title search, best match first, archived chats included (``archived_at`` tells);
        any input is safe, blank gives ``[]``."""
        self._check_open()
        limit = _check_limit(limit, DEFAULT_LIST_LIMIT)
        return exact_first(title_tiers(query), self._records.search_titles, lambda s: s.id, limit)

    def record_chat_turn(
        self, chat_id: str, preview: str, *, generation: int | None = None
    ) -> ChatSummary:
        """Child → parent only: a reply finished; bump ``updated_at`` and set the preview.

        Not for clients (see the module docstring). ``generation`` (from ``Chat.generation``)
        makes a report from a stale generation fail instead of touching the new chat.
        """
        self._check_open()
        return self._lifecycle.record_turn(chat_id, preview, generation)

    # ── conversations ───────────────────────────────────────────────

    def get_chat(self, chat_id: str, *, generation: int | None = None) -> Chat:
        """The handle of a live chat; unknown, deleted or stale-generation ids: KeyError."""
        self._check_open()
        return Chat(self._open, self._lifecycle.load_live(chat_id, generation))

    def _foreign_commits(self, num: int, generation: int, source: object) -> bool:
        # A method, not the cache's own: the index is built before the cache it asks.
        return self._open.foreign_commits(num, generation, source)

    # ── cross-chat message search ───────────────────────────────────

    def search_messages(
        self,
        query: str,
        *,
        limit: int | None = DEFAULT_SEARCH_LIMIT,
        chat_ids: Collection[str] | None = None,
    ) -> list[ChatHit]:
        """Every message of every live chat holding all of ``query``'s words in any order (a
        quoted run of words as a phrase), best first, the exact phrase before the rest.

        Answered by the directory's index after applying pending changes; ``limit`` is
        global. ``chat_ids`` keeps the hits of those chats only (a project's search).
        Snippets mark hits with ``SNIPPET_START`` / ``SNIPPET_END``.
        """
        self._check_open()
        return self._search.indexed(query, _check_limit(limit, DEFAULT_SEARCH_LIMIT), chat_ids)

    def search_messages_fanout(
        self, query: str, *, limit: int | None = DEFAULT_SEARCH_LIMIT
    ) -> list[ChatHit]:
        """The same search answered by each chat's own index (the RFC's fan-out; slow path).

        Used to verify the directory index; costs one file open per chat with messages.
        """
        self._check_open()
        return self._search.fanout(query, _check_limit(limit, DEFAULT_SEARCH_LIMIT))

    def changes_written(self) -> int:
        """Changes this object has seen written to its chats: it grows while people write
        (a background job backs off then)."""
        return self._index.recorded

    def flush_index(self) -> IndexRepair:
        """Apply pending change hints to the message index now (searches do this anyway)."""
        self._check_open()
        return self._index.flush()

    def repair_index(self, *, full: bool = False) -> IndexRepair:
        """Rebuild chats a crashed writer left behind (every chat when ``full``)."""
        self._check_open()
        return self._index.repair(full=full)

    # ── shared memory ───────────────────────────────────────────────

    def get_shared_context(self, label: str) -> str | None:
        self._check_open()
        return self._shared.get(label)

    def list_shared_contexts(self) -> list[tuple[str, str]]:
        """Every shared block as ``(label, content)``, by label (for a memory panel)."""
        self._check_open()
        return self._shared.list()

    def set_shared_context(self, label: str, content: str) -> None:
        """Replace a block (last writer wins: prefer ``append_shared_context`` for facts)."""
        self._check_open()
        self._shared.set(label, content)

    def append_shared_context(self, label: str, delta: str) -> None:
        """Append atomically: concurrent appends from any thread or process all land."""
        self._check_open()
        self._shared.append(label, delta)

    def search_shared(self, label: str, query: str) -> str | None:
        """The best matching entries of ``label`` joined by blank lines, or ``None``."""
        self._check_open()
        return self._shared.search(label, query)

    def index_shared(self, label: str, key: str, content: str) -> None:
        """Insert or replace the searchable entry ``key`` of ``label``."""
        self._check_open()
        self._shared.index(label, key, content)

    # ── events ──────────────────────────────────────────────────────

    def subscribe(self, listener: DirectoryListener) -> Callable[[], None]:
        """Call ``listener(event)`` after every committed directory change; returns unsubscribe."""
        return self._events.subscribe(listener)

    # ── import and fork (backend.chats.imports, backend.chats.fork) ──

    @cached_property
    def imports(self) -> ChatImports:
        """The directory side of imports: one chat per source conversation."""
        self._check_open()
        return ChatImports(
            self.database,
            self._records,
            self.directory_id,
            insert_new=self._lifecycle.insert_new,
            load_live=self._lifecycle.load_live,
            emit_after_commit=self._emit_after_commit,
            clock=self._clock,
        )

    def fork_chat(self, chat_id: str, at_message_id: str, title: str | None = None) -> ChatSummary:
        """A new chat holding the path from the root to ``at_message_id`` (see ``fork``)."""
        self._check_open()
        return fork_chat(self, chat_id, at_message_id, title)

    def share_attachments(self, chat_id: str, hashes: set[str], load: AttachmentLoader) -> None:
        """Let ``chat_id`` read the payloads ``hashes`` from the directory's shared pool.

        Those not there yet are stored once, from ``load`` (the source chat's reader). A fork
        calls it before writing its messages, which keep their pointers instead of the bytes.
        Server-side only, like ``record_chat_turn``: a UI offers ``fork_chat``, not this.
        """
        self._check_open()
        self._pool.share(self._lifecycle.load_live(chat_id).num, hashes, load)

    def _emit_after_commit(self, event: DirectoryEvent) -> None:
        self.database.after_commit(lambda: self._events.emit(event))

    # ── soft-delete sweep ───────────────────────────────────────────

    def sweep(self, *, now_ms: int | None = None) -> list[str]:
        """Purge the files of chats deleted longer than the window ago, and the temporary
        chats that are due; return their ids."""
        self._check_open()
        now = self._clock() if now_ms is None else now_ms
        return self._purger.sweep(now) + self.temporary.expire(now)

    # ── helpers ─────────────────────────────────────────────────────

    def _path_of(self, record: ChatRecord) -> Path:
        return self.layout.chat_path(record.id, record.generation)

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"directory {self.directory_id!r} is closed")

    # ── lifecycle ───────────────────────────────────────────────────

    def close_idle_chats(self, idle_s: float) -> int:
        """Close the chat files no handle holds and none used for ``idle_s``; how many."""
        self._check_open()
        return self._open.close_idle(idle_s)

    def close(self) -> None:
        """Flush the index, close every open chat (releasing its lease), close the file."""
        if self._closed:
            return
        self._closed = True
        self._watcher.stop()
        try:
            self._open.close_all()
        finally:
            self._index.close()
            self._scopes.close()

    @property
    def closed(self) -> bool:
        return self._closed


def _check_limit(limit: int | None, default: int) -> int:
    limit = check_limit(limit, default)
    if limit < 1:
        raise InvalidInputError("limit must be at least 1")
    return limit
