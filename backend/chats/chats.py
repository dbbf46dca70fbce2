"""``Chats``: the directory of one user or workspace, and ``Chat``, one conversation in it.

This module composes the stores (``directory``, ``shared``, ``index``) over one
``directory.sqlite`` and one ``backend.sessions`` file per chat (layout in
``backend.chats.layout``). It owns transactions, events, the soft-delete lifecycle and the
cache of open chat files.

Lifecycle of a chat::

    create_chat ──► live ──delete_chat──► soft-deleted ──(window passes, lazy sweep)──► purged
                     ▲                         │ restore_chat                              │
                     └─────────────────────────┘◄── create_chat(chat_id=...) (generation+1) ┘

* **Soft delete** hides the chat from every list and search in one statement, and leaves its
  file alone: a reply still streaming into it finishes writing (RFC edge case 3). The files are
  removed by a lazy sweep (on open, create and delete) once ``soft_delete_window_s`` has
  passed. Each file is first marked retired (``Sessions.retire``), so a handle that any
  instance or process still holds refuses writes with ``ChatNotFoundError`` instead of
  acknowledging them into a deleted file; this instance's own handles are closed too.
* **Generations.** Re-creating an id starts a fresh generation with a fresh file
  (``<id>.g<n>.sqlite``). ``get_chat(id, generation=g)`` and ``record_chat_turn(...,
  generation=g)`` refuse a stale ``g`` with ``ChatNotFoundError``, so a client that held the
  old chat cannot write into the new one (RFC edge case 4).
* **Lazy files.** ``create_chat`` writes only the directory row (RFC edge case 1): the chat's
  file is created when ``Chat.session`` is first used, and everything that reads chats
  (fan-out, repair, purge) tolerates a row without a file.

Open chat files: ``Chat.session`` opens the chat's ``Sessions`` once and caches it (LRU,
``max_open_chats``). An entry is never closed while a ``Chat`` handle that used it is alive,
so **hold the Chat** (not only ``chat.session``) for as long as you use the session.

Trust boundary: every public method is safe to expose to a client **except**
``record_chat_turn``, which is child → parent (the conversation runtime reports a finished
reply); a UI must not offer it, or a client could forge sidebar entries. ``create_chat``'s
``chat_id`` argument is for server-side restores; clients get server-minted ids.

Concurrency: all methods are synchronous and thread-safe (async callers offload). Lock order
is ``Database`` locks only; the entry-cache lock is a leaf, never held while touching a file.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from types import TracebackType

from backend.chats.directory import ChatRecord, DirectoryStore
from backend.chats.events import (
    ChatCreated,
    ChatDeleted,
    ChatRenamed,
    ChatRestored,
    ChatTurnRecorded,
    DirectoryEvent,
    DirectoryListener,
    EventBus,
    SharedContextChanged,
)
from backend.chats.fork import fork_chat
from backend.chats.ids import ChatIds
from backend.chats.imports import ChatImports
from backend.chats.index import CONVERSATION, MessageIndex, fanout_search
from backend.chats.layout import DirectoryLayout
from backend.chats.models import ChatCursor, ChatHit, ChatSummary, IndexRepair
from backend.chats.shared import SharedContextStore, check_content, check_label
from backend.chats.text import (
    clean_preview,
    clean_title,
    default_title,
    phrase_query,
    prefix_query,
)
from backend.chats.watch import ForeignChangeWatcher
from backend.clock import now_ms
from backend.config import DEFAULT_SOFT_DELETE_WINDOW_S, Settings
from backend.errors import ChatNotFoundError, ConflictError, InvalidInputError, StorageError
from backend.sessions import (
    SearchResult,
    Session,
    SessionChangeEvent,
    Sessions,
)
from backend.sessions.search import check_limit
from backend.storage import Database

logger = logging.getLogger(__name__)

DEFAULT_LIST_LIMIT = 50
DEFAULT_SEARCH_LIMIT = 20
DEFAULT_MAX_OPEN_CHATS = 64
SWEEP_BATCH = 100

TitleGenerator = Callable[[str | None], str]
"""``generate_title(first_message)`` -> title; called with ``None`` by ``create_chat``."""
Clock = Callable[[], int]


class Chat:
    """One conversation of a directory: ``id``, ``generation`` and its ``session``.

    Cheap to create; opening the file is deferred to the first use of :attr:`session`.
    """

    __slots__ = ("__weakref__", "_directory", "_num", "generation", "id")

    def __init__(self, directory: Chats, record: ChatRecord) -> None:
        self._directory = directory
        self._num = record.num
        self.id = record.id
        self.generation = record.generation

    @property
    def session(self) -> Session:
        """The conversation (``backend.sessions.Session``); creates the file on first use."""
        return self._directory._session_of(self)

    @property
    def sessions(self) -> Sessions:
        """The chat file's ``Sessions`` (for ``subscribe`` or an atomic ``database``)."""
        return self._directory._sessions_of(self)

    @property
    def database(self) -> Database:
        """The chat file's database: other stores (the runtime's) commit with its messages."""
        return self.sessions.database

    @property
    def has_file(self) -> bool:
        """Whether the chat's file exists yet (``session`` creates it on first use)."""
        return self._directory._has_file(self)

    @property
    def live(self) -> bool:
        """False once the chat is deleted, purged or re-created under a newer generation."""
        return self._directory._is_current(self, allow_deleted=False)

    def __repr__(self) -> str:
        return f"Chat(id={self.id!r}, generation={self.generation})"


@dataclass(eq=False)
class _OpenChat:
    """One open chat file in the cache."""

    num: int
    chat_id: str
    generation: int
    sessions: Sessions
    unsubscribe: Callable[[], None]
    data_version: int = 0  # of ``sessions.database`` at the last index flush
    pins: weakref.WeakSet[Chat] = field(default_factory=weakref.WeakSet)


class Chats:
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
    ) -> None:
        if soft_delete_window_s < 0:
            raise ValueError("soft_delete_window_s must not be negative")
        if max_open_chats < 1:
            raise ValueError("max_open_chats must be at least 1")
        self.layout = DirectoryLayout(root, directory_id)
        self.layout.ensure_folders()
        self.database = Database(self.layout.database_path)
        self._clock = clock or now_ms
        self._window_ms = int(soft_delete_window_s * 1000)
        self._generate_title = generate_title
        self._max_open = max_open_chats
        self._reserved = tuple(reserved_metadata_keys)
        self._events = EventBus()
        self._lock = threading.Lock()  # leaf lock: the open-chat cache only
        self._open: OrderedDict[int, _OpenChat] = OrderedDict()
        self._closed = False
        self._search_database: Database | None = None
        try:
            # Searches read through a second connection (WAL: readers never block the writer),
            # so a long search never holds up create_chat or a flush on the main one.
            self._search_database = Database(self.layout.database_path)
            self._directory = DirectoryStore(self.database, self._search_database)
            self._shared = SharedContextStore(self.database, self._search_database)
            self._ids = ChatIds(self._directory.id_key())
            self._index = MessageIndex(
                self.database,
                search_db=self._search_database,
                load_chat=self._directory.load_num,
                path_of=self._path_of,
                unpurged_chats=lambda: [num for num, _, _ in self._directory.unpurged_chats()],
                foreign_commits=self._foreign_commits,
                clock=self._clock,
            )
            self._watcher = ForeignChangeWatcher(
                self.database, self._directory, self.directory_id, self._events.emit
            )
            self._events.on_first, self._events.on_last = self._watcher.start, self._watcher.stop
            self.sweep()
            self._remove_stale_files()
            self._index.repair()
        except BaseException:
            self.database.close()
            if self._search_database is not None:
                self._search_database.close()
            raise

    @classmethod
    def from_settings(cls, settings: Settings, directory_id: str | None = None) -> Chats:
        """The directory of ``directory_id`` (default: the configured user) under data_dir."""
        return cls(
            settings.data_dir,
            directory_id or settings.user_id,
            soft_delete_window_s=settings.soft_delete_window_s,
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
        now = self._clock()
        if title is None:
            title = self._generate_title(None) if self._generate_title else default_title(now)
        title = clean_title(title)
        if chat_id is None:
            record = self._insert_new(title, now)
        else:
            record = self._recreate(self._ids.validate(chat_id), title, now)
        summary = record.summary()
        self._emit_after_commit(ChatCreated(self.directory_id, summary))
        self.sweep()
        return summary

    def _insert_new(self, title: str, now: int) -> ChatRecord:
        while True:
            chat_id = self._ids.mint()
            with self.database.transaction():
                if self._directory.load(chat_id) is None:  # 80 random bits: ~never loops
                    return self._directory.insert(chat_id, title, now)

    def _recreate(self, chat_id: str, title: str, now: int) -> ChatRecord:
        with self.database.transaction():
            old = self._directory.load(chat_id)
            if old is None:
                return self._directory.insert(chat_id, title, now)
            if old.live:
                raise ConflictError(f"chat {chat_id!r} already exists")
            self._index.store.drop_chat(old.num)
            self._index.store.release_all(old.num)
            record = self._directory.recreate(old, title, now)
        # After the commit: nothing can restore the old generation any more. A crash before
        # this line leaves a stale file that the next open's sweep removes.
        self._remove_files(old)
        return record

    def list_chats(
        self,
        *,
        limit: int | None = DEFAULT_LIST_LIMIT,
        before: int | ChatCursor | tuple[int, str] | None = None,
        search: str | None = None,
    ) -> list[ChatSummary]:
        """Live chats, newest ``updated_at`` first.

        ``before`` is a cursor: an ``updated_at`` (the RFC's; rows tying with it are skipped)
        or a tie-stable ``ChatCursor`` / ``summary.cursor`` / ``(updated_at, id)``.
        ``search`` keeps chats whose title matches (every word, the last as a prefix); a blank
        ``search`` is no filter.
        """
        self._check_open()
        limit = _check_limit(limit, DEFAULT_LIST_LIMIT)
        cursor = _cursor(before)
        if search is not None and not isinstance(search, str):
            raise TypeError("search must be a string")
        if search is None or not search.strip():
            return self._directory.list_live(limit, cursor)
        match = prefix_query(search)
        if match is None:
            return []
        return self._directory.list_live(limit, cursor, match)

    def get_summary(self, chat_id: str) -> ChatSummary:
        """The sidebar row of a live chat."""
        self._check_open()
        return self._load_live(chat_id).summary()

    def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        """Set a trimmed, non-blank title (children never learn of it: RFC edge case 5)."""
        self._check_open()
        title = clean_title(title)
        with self.database.transaction():
            record = self._load_live(chat_id)
            if record.title == title:
                return record.summary()
            summary = self._directory.rename(record, title).summary()
            self._emit_after_commit(ChatRenamed(self.directory_id, summary))
        return summary

    def delete_chat(self, chat_id: str) -> None:
        """Soft-delete: gone from every list and search at once; idempotent."""
        self._check_open()
        chat_id = self._ids.validate(chat_id)
        with self.database.transaction():
            record = self._directory.load(chat_id)
            if record is not None and self._directory.soft_delete(record, self._clock()):
                self._emit_after_commit(ChatDeleted(self.directory_id, chat_id))
        self.sweep()

    def restore_chat(self, chat_id: str) -> ChatSummary:
        """Undo a delete within the soft-delete window (same generation, same file)."""
        self._check_open()
        with self.database.transaction():
            record = self._load(chat_id)
            if record.purged_at is not None:
                raise ChatNotFoundError(chat_id)
            if record.live:
                return record.summary()
            summary = self._directory.restore(record).summary()
            self._emit_after_commit(ChatRestored(self.directory_id, summary))
        return summary

    def search_chats(
        self, query: str, *, limit: int | None = DEFAULT_LIST_LIMIT
    ) -> list[ChatSummary]:
        """Title search, best match first; any input is safe, blank gives ``[]``."""
        self._check_open()
        limit = _check_limit(limit, DEFAULT_LIST_LIMIT)
        match = prefix_query(query)
        return [] if match is None else self._directory.search_titles(match, limit)

    def record_chat_turn(
        self, chat_id: str, preview: str, *, generation: int | None = None
    ) -> ChatSummary:
        """Child → parent only: a reply finished; bump ``updated_at`` and set the preview.

        Not for clients (see the module docstring). ``generation`` (from ``Chat.generation``)
        makes a report from a stale generation fail instead of touching the new chat.
        """
        self._check_open()
        preview = clean_preview(preview)
        with self.database.transaction():
            record = self._load_live(chat_id, generation)
            summary = self._directory.record_turn(record, preview, self._clock()).summary()
            self._emit_after_commit(ChatTurnRecorded(self.directory_id, summary))
        return summary

    # ── conversations ───────────────────────────────────────────────

    def get_chat(self, chat_id: str, *, generation: int | None = None) -> Chat:
        """The handle of a live chat; unknown, deleted or stale-generation ids: KeyError."""
        self._check_open()
        return Chat(self, self._load_live(chat_id, generation))

    def _session_of(self, chat: Chat) -> Session:
        return self._entry_for(chat).sessions.session(CONVERSATION)

    def _sessions_of(self, chat: Chat) -> Sessions:
        return self._entry_for(chat).sessions

    def _entry_for(self, chat: Chat) -> _OpenChat:
        self._check_open()
        with self._lock:
            entry = self._open.get(chat._num)
            if entry is not None and entry.generation == chat.generation:
                self._open.move_to_end(chat._num)
                entry.pins.add(chat)
                return entry
        if not self._is_current(chat, allow_deleted=True):
            raise ChatNotFoundError(chat.id)
        # Lease first: from now on a crash of this process leaves a mark that repair finds.
        self._index.acquire_lease(chat._num)
        sessions = Sessions(
            self.layout.chat_path(chat.id, chat.generation),
            reserved_metadata_keys=self._reserved,
            retired_error=partial(ChatNotFoundError, chat.id),
        )
        entry = _OpenChat(chat._num, chat.id, chat.generation, sessions, lambda: None)
        entry.data_version = sessions.database.data_version()
        entry.unsubscribe = sessions.subscribe(self._listener_for(entry))
        with self._lock:
            existing = self._open.get(chat._num)
            if existing is not None and existing.generation == chat.generation:
                winner, loser = existing, entry  # another thread opened it meanwhile
            else:
                winner, loser = entry, None
                self._open[chat._num] = entry
            self._open.move_to_end(chat._num)
            winner.pins.add(chat)
            victims = self._pick_victims()
        if loser is not None:
            loser.unsubscribe()
            loser.sessions.close()
        for victim in victims:
            self._close_entry(victim)
        return winner

    def _has_file(self, chat: Chat) -> bool:
        with self._lock:
            entry = self._open.get(chat._num)
            if entry is not None and entry.generation == chat.generation:
                return True
        return self.layout.chat_path(chat.id, chat.generation).exists()

    def _pick_victims(self) -> list[_OpenChat]:
        """Least recently used unpinned entries beyond capacity (call under ``_lock``)."""
        victims = []
        excess = len(self._open) - self._max_open
        for entry in list(self._open.values()):
            if excess <= 0:
                break
            if len(entry.pins) == 0:
                del self._open[entry.num]
                victims.append(entry)
                excess -= 1
        return victims

    def _listener_for(self, entry: _OpenChat) -> Callable[[SessionChangeEvent], None]:
        num, generation = entry.num, entry.generation

        def on_change(event: SessionChangeEvent) -> None:
            if self._index.observe(num, generation, entry, event):
                self._index.flush()

        return on_change

    def _foreign_commits(self, num: int, generation: int, source: object) -> bool:
        """Did a connection other than ``source`` (an open entry) write the chat since?"""
        with self._lock:
            entry = self._open.get(num)
        if entry is None or entry is not source or entry.generation != generation:
            return True
        database = entry.sessions.database
        # Called under the directory's write lock: never wait for a chat's lock here (its
        # holder may be waiting for the directory). Busy means "unknown": re-read the file,
        # which needs no lock of ours.
        if not database.lock.acquire(blocking=False):
            return True
        try:
            version = database.data_version()
        except Exception:  # closed under us: assume the worst, re-read the file
            return True
        finally:
            database.lock.release()
        changed, entry.data_version = version != entry.data_version, version
        return changed

    def _close_entry(self, entry: _OpenChat) -> None:
        """Close the file, flush, stop listening, release the lease (in that order).

        Closing first means no commit can follow the final flush; an event whose commit
        raced the close is still heard (the listener goes last) and flushed before release.
        """
        try:
            entry.sessions.close()
            self._index.flush()
        finally:
            entry.unsubscribe()
        if self._index.has_pending(entry.num):
            self._index.flush()
        if not self.database.closed:
            self._index.release_lease(entry.num)

    def _is_current(self, chat: Chat, *, allow_deleted: bool) -> bool:
        record = self._directory.load_num(chat._num)
        return (
            record is not None
            and record.generation == chat.generation
            and record.purged_at is None
            and (allow_deleted or record.live)
        )

    # ── cross-chat message search ───────────────────────────────────

    def search_messages(
        self, query: str, *, limit: int | None = DEFAULT_SEARCH_LIMIT
    ) -> list[ChatHit]:
        """Every message of every live chat containing ``query`` as a phrase, best first.

        Answered by the directory's index after applying pending changes; ``limit`` is
        global. Snippets mark hits with ``SNIPPET_START`` / ``SNIPPET_END``.
        """
        self._check_open()
        limit = _check_limit(limit, DEFAULT_SEARCH_LIMIT)
        match = phrase_query(query)
        if match is None:
            return []
        self._index.flush()
        return self._index.store.search(match, limit)

    def search_messages_fanout(
        self, query: str, *, limit: int | None = DEFAULT_SEARCH_LIMIT
    ) -> list[ChatHit]:
        """The same search answered by each chat's own index (the RFC's fan-out; slow path).

        Used to verify the directory index; costs one file open per chat with messages.
        """
        self._check_open()
        limit = _check_limit(limit, DEFAULT_SEARCH_LIMIT)
        if phrase_query(query) is None:
            return []
        chats = [
            (chat_id, self.layout.chat_path(chat_id, generation))
            for _, chat_id, generation in self._directory.live_chats()
        ]

        def per_chat() -> Iterator[tuple[str, list[SearchResult]]]:
            for chat_id, path in chats:
                if not path.exists():
                    continue  # a chat never written has nothing to find (RFC edge case 1)
                with Sessions(path, reserved_metadata_keys=self._reserved) as sessions:
                    yield chat_id, sessions.session(CONVERSATION).search(query, limit=limit)

        return fanout_search(per_chat(), query, limit)

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
        return self._shared.get(check_label(label))

    def list_shared_contexts(self) -> list[tuple[str, str]]:
        """Every shared block as ``(label, content)``, by label (for a memory panel)."""
        self._check_open()
        return self._shared.list()

    def set_shared_context(self, label: str, content: str) -> None:
        """Replace a block (last writer wins: prefer ``append_shared_context`` for facts)."""
        self._check_open()
        label, content = check_label(label), check_content(content)
        with self.database.transaction():
            self._shared.set(label, content, self._clock())
            self._emit_after_commit(SharedContextChanged(self.directory_id, label, "set", content))

    def append_shared_context(self, label: str, delta: str) -> None:
        """Append atomically: concurrent appends from any thread or process all land."""
        self._check_open()
        label, delta = check_label(label), check_content(delta)
        with self.database.transaction():
            content = self._shared.append(label, delta, self._clock())
            self._emit_after_commit(
                SharedContextChanged(self.directory_id, label, "append", content)
            )

    def search_shared(self, label: str, query: str) -> str | None:
        """The best matching entries of ``label`` joined by blank lines, or ``None``."""
        self._check_open()
        if not isinstance(query, str):
            raise TypeError("query must be a string")
        return self._shared.search(check_label(label), query)

    def index_shared(self, label: str, key: str, content: str) -> None:
        """Insert or replace the searchable entry ``key`` of ``label``."""
        self._check_open()
        label, key = check_label(label), check_label(key, "shared entry key")
        content = check_content(content)
        with self.database.transaction():
            self._shared.index(label, key, content, self._clock())
            self._emit_after_commit(
                SharedContextChanged(self.directory_id, label, "index", content, key)
            )

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
            self._directory,
            self.directory_id,
            insert_new=self._insert_new,
            load_live=self._load_live,
            emit_after_commit=self._emit_after_commit,
            clock=self._clock,
        )

    def fork_chat(self, chat_id: str, at_message_id: str, title: str | None = None) -> ChatSummary:
        """A new chat holding the path from the root to ``at_message_id`` (see ``fork``)."""
        self._check_open()
        return fork_chat(self, chat_id, at_message_id, title)

    def _emit_after_commit(self, event: DirectoryEvent) -> None:
        self.database.after_commit(lambda: self._events.emit(event))

    # ── soft-delete sweep ───────────────────────────────────────────

    def sweep(self, *, now_ms: int | None = None) -> list[str]:
        """Purge the files of chats deleted longer than the window ago; return their ids."""
        self._check_open()
        now = self._clock() if now_ms is None else now_ms
        purged = []
        for record in self._directory.due_for_purge(now - self._window_ms, SWEEP_BATCH):
            with self.database.transaction():
                if not self._directory.mark_purged(record, now):
                    continue  # restored (or purged) meanwhile
                self._index.store.drop_chat(record.num)
                self._index.store.release_all(record.num)
            self._remove_files(record)  # after the commit: a restore can no longer win
            purged.append(record.id)
        return purged

    def _remove_stale_files(self) -> list[Path]:
        """Delete files of purged or superseded generations (left by a crash mid-purge).

        Files of ids this directory has no row for are left alone: they may be someone's
        data under a directory restored from an older backup (RFC edge case 2).
        """
        current = {
            chat_id: generation for _, chat_id, generation in self._directory.unpurged_chats()
        }
        removed = []
        for path in sorted(self.layout.chats_folder.glob("*.g*.sqlite")):
            chat_id, _, generation_text = path.name[: -len(".sqlite")].rpartition(".g")
            if not generation_text.isdigit():
                continue
            record = self._directory.load(chat_id)
            if record is None:
                continue
            if current.get(chat_id) != int(generation_text):
                self._retire_and_remove(chat_id, int(generation_text), None)
                removed.append(path)
        return removed

    def _remove_files(self, record: ChatRecord) -> None:
        """Close any open entry of the record's generation, then delete its files."""
        with self._lock:
            entry = self._open.get(record.num)
            if entry is not None and entry.generation == record.generation:
                del self._open[record.num]
            else:
                entry = None
        if entry is not None:
            self._index.forget_hints(record.num)
            entry.unsubscribe()
        self._retire_and_remove(record.id, record.generation, entry)

    def _retire_and_remove(self, chat_id: str, generation: int, entry: _OpenChat | None) -> None:
        """Mark the file retired, so a handle any process still holds refuses writes, then
        delete it. If it cannot be marked (locked for longer than the busy timeout), it stays
        for the next open's ``_remove_stale_files``: deleting it unmarked could lose writes."""
        try:
            if entry is not None:
                entry.sessions.retire()
            else:
                Sessions.retire_file(self.layout.chat_path(chat_id, generation))
        except StorageError:
            logger.warning("chat %s.g%s: could not retire its file", chat_id, generation)
            return
        finally:
            if entry is not None:
                entry.sessions.close()
        self.layout.remove_chat_files(chat_id, generation)

    # ── helpers ─────────────────────────────────────────────────────

    def _path_of(self, record: ChatRecord) -> Path:
        return self.layout.chat_path(record.id, record.generation)

    def _load(self, chat_id: str) -> ChatRecord:
        record = self._directory.load(self._ids.validate(chat_id))
        if record is None:
            raise ChatNotFoundError(chat_id)
        return record

    def _load_live(self, chat_id: str, generation: int | None = None) -> ChatRecord:
        record = self._load(chat_id)
        if not record.live or (generation is not None and generation != record.generation):
            raise ChatNotFoundError(chat_id)
        return record

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"directory {self.directory_id!r} is closed")

    # ── lifecycle ───────────────────────────────────────────────────

    def close(self) -> None:
        """Flush the index, close every open chat (releasing its lease), close the file."""
        if self._closed:
            return
        self._closed = True
        self._watcher.stop()
        with self._lock:
            entries = list(self._open.values())
            self._open.clear()
        try:
            for entry in entries:
                self._close_entry(entry)
        finally:
            self._index.close()
            self.database.close()
            if self._search_database is not None:
                self._search_database.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Chats:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _check_limit(limit: int | None, default: int) -> int:
    limit = check_limit(limit, default)
    if limit < 1:
        raise InvalidInputError("limit must be at least 1")
    return limit


def _cursor(before: object) -> int | ChatCursor | None:
    if before is None or isinstance(before, ChatCursor):
        return before
    if isinstance(before, ChatSummary):
        return before.cursor
    if isinstance(before, tuple) and len(before) == 2:
        updated_at, chat_id = before
        if isinstance(updated_at, int) and isinstance(chat_id, str):
            return ChatCursor(updated_at, chat_id)
    if isinstance(before, int) and not isinstance(before, bool):
        return before
    raise TypeError("before must be an updated_at int, a ChatCursor or (updated_at, id)")
