"""``Chat``, the handle of one conversation, and ``OpenChatFiles``, the directory's open chat files.

``Chat.session`` opens the chat's ``Sessions`` once and caches it here (LRU,
``max_open_chats``); it creates the file, so only a writer uses it. ``Chat.reader`` never
does: a chat never written reads as an empty conversation (the SPEC, in
docs/design-sources.md: the file is created on first write), so opening a new chat in the UI
leaves nothing on disk. An entry is never closed while a ``Chat`` handle that used it is
alive, so **hold the Chat** (not only ``chat.session``) for as long as you use the session.

Each open file is wired to the message index (:mod:`backend.chats.index`): a lease is taken
before the file opens, the file's change feed is observed, and closing flushes and releases
the lease, in that order (see :meth:`OpenChatFiles.close_entry`).

Concurrency: thread-safe. The cache lock is a leaf, never held while touching a file.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from backend.chats.chat_records import ChatRecord
from backend.chats.index import CONVERSATION
from backend.chats.parts import DirectoryParts
from backend.errors import ChatNotFoundError, ChatsError
from backend.sessions import Session, SessionChangeEvent, Sessions
from backend.storage import Database


class Chat:
    """One conversation of a directory: ``id``, ``generation`` and its ``session``.

    Cheap to create; opening the file is deferred to the first use of :attr:`session`.
    """

    __slots__ = ("__weakref__", "_files", "_num", "generation", "id")

    def __init__(self, files: OpenChatFiles, record: ChatRecord) -> None:
        self._files = files
        self._num = record.num
        self.id = record.id
        self.generation = record.generation

    @property
    def session(self) -> Session:
        """The conversation (``backend.sessions.Session``); creates the file on first use."""
        return self._files.entry(self).sessions.session(CONVERSATION)

    @property
    def reader(self) -> Session:
        """The conversation for reading; never creates the file.

        The chat's own session once its file exists; before that, an empty conversation that
        refuses writes (a write through it would be lost: write through :attr:`session`).
        """
        if self.has_file:
            return self.session
        if not self._files.is_current(self, allow_deleted=False):
            raise ChatNotFoundError(self.id)
        return self._files.unwritten()

    @property
    def sessions(self) -> Sessions:
        """The chat file's ``Sessions`` (for ``subscribe`` or an atomic ``database``)."""
        return self._files.entry(self).sessions

    @property
    def database(self) -> Database:
        """The chat file's database: other stores (the runtime's) commit with its messages."""
        return self.sessions.database

    @property
    def has_file(self) -> bool:
        """Whether the chat's file exists yet (``session`` creates it on first use)."""
        return self._files.has_file(self)

    @property
    def live(self) -> bool:
        """False once the chat is deleted, purged or re-created under a newer generation."""
        return self._files.is_current(self, allow_deleted=False)

    def __repr__(self) -> str:
        return f"Chat(id={self.id!r}, generation={self.generation})"


@dataclass(eq=False)
class OpenChatFile:
    """One open chat file in the cache."""

    num: int
    chat_id: str
    generation: int
    sessions: Sessions
    unsubscribe: Callable[[], None]
    data_version: int = 0  # of ``sessions.database`` at the last index flush
    pins: weakref.WeakSet[Chat] = field(default_factory=weakref.WeakSet)
    last_used: float = field(default_factory=time.monotonic)  # the last ``entry()`` for it


class OpenChatFiles:
    """The open chat files of one directory, least recently used first (see the module)."""

    def __init__(
        self,
        parts: DirectoryParts,
        *,
        max_open: int,
        reserved_metadata_keys: tuple[str, ...],
        check_open: Callable[[], None],
    ) -> None:
        self._parts = parts
        self._index = parts.index  # on every change event: one attribute lookup less
        self._max_open = max_open
        self._reserved = reserved_metadata_keys
        self._check_open = check_open
        self._lock = threading.Lock()  # leaf lock: the cache only
        self._open: OrderedDict[int, OpenChatFile] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def entry(self, chat: Chat) -> OpenChatFile:
        """The chat's open file, opened (lease first) if it is not; pinned by ``chat``."""
        self._check_open()
        with self._lock:
            entry = self._open.get(chat._num)
            if entry is not None and entry.generation == chat.generation:
                self._open.move_to_end(chat._num)
                entry.pins.add(chat)
                entry.last_used = time.monotonic()
                return entry
        if not self.is_current(chat, allow_deleted=True):
            raise ChatNotFoundError(chat.id)
        # Lease first: from now on a crash of this process leaves a mark that repair finds.
        self._index.acquire_lease(chat._num)
        self._parts.files.opening(chat.id, chat.generation)
        sessions = Sessions(
            self._parts.layout.chat_path(chat.id, chat.generation),
            reserved_metadata_keys=self._reserved,
            retired_error=partial(ChatNotFoundError, chat.id),
            shared_attachments=self._parts.pool.load,
        )
        entry = OpenChatFile(chat._num, chat.id, chat.generation, sessions, lambda: None)
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
            winner.last_used = time.monotonic()
            victims = self._pick_victims()
        if loser is not None:
            loser.unsubscribe()
            loser.sessions.close()
        for victim in victims:
            self.close_entry(victim)
        return winner

    def unwritten(self) -> Session:
        """The empty, write-refusing conversation every never-written chat reads as."""
        return unwritten_conversation()

    def has_file(self, chat: Chat) -> bool:
        with self._lock:
            entry = self._open.get(chat._num)
            if entry is not None and entry.generation == chat.generation:
                return True
        return self._parts.files.exists(chat.id, chat.generation)

    def is_current(self, chat: Chat, *, allow_deleted: bool) -> bool:
        record = self._parts.records.load_num(chat._num)
        return (
            record is not None
            and record.generation == chat.generation
            and record.purged_at is None
            and (allow_deleted or record.live)
        )

    def _pick_victims(self) -> list[OpenChatFile]:
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

    def _listener_for(self, entry: OpenChatFile) -> Callable[[SessionChangeEvent], None]:
        num, generation = entry.num, entry.generation

        def on_change(event: SessionChangeEvent) -> None:
            if self._index.observe(num, generation, entry, event):
                self._index.flush()

        return on_change

    def foreign_commits(self, num: int, generation: int, source: object) -> bool:
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

    def take(self, num: int, generation: int) -> OpenChatFile | None:
        """Remove the open entry of that generation from the cache (the caller closes it)."""
        with self._lock:
            entry = self._open.get(num)
            if entry is None or entry.generation != generation:
                return None
            del self._open[num]
            return entry

    def close_entry(self, entry: OpenChatFile) -> None:
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
        if not self._parts.database.closed:
            self._index.release_lease(entry.num)

    def close_idle(self, idle_s: float) -> int:
        """Close the files nobody holds and nobody fetched for ``idle_s``; how many closed.

        The cap (``max_open``) bounds what one directory keeps, but a person who read 64
        chats an hour ago would keep 64 files (~150 KB of SQLite heap and 3 descriptors each)
        while any tab of theirs stays connected. The next use opens the file again.
        """
        cutoff = time.monotonic() - idle_s
        with self._lock:
            idle = [e for e in self._open.values() if not e.pins and e.last_used <= cutoff]
            for entry in idle:
                del self._open[entry.num]
        for entry in idle:
            self.close_entry(entry)
        return len(idle)

    def close_all(self) -> None:
        """Close every open entry (the directory is closing)."""
        with self._lock:
            entries = list(self._open.values())
            self._open.clear()
        for entry in entries:
            self.close_entry(entry)


_unwritten: Sessions | None = None
_unwritten_lock = threading.Lock()


def unwritten_conversation() -> Session:
    """The empty, write-refusing conversation every never-written chat of this process reads as.

    One in-memory file with the real schema, so every read answers exactly as an empty chat
    file would; marked retired, so a write raises instead of vanishing. One per process, not
    per directory: it holds nothing of anyone's, and each connection costs ~120 KB of SQLite
    heap, which every person whose tab showed a new chat paid. Never closed (it holds no file).
    """
    global _unwritten
    with _unwritten_lock:
        if _unwritten is None:
            empty = Sessions(":memory:", retired_error=_write_to_unwritten)
            empty.retire()
            _unwritten = empty
        return _unwritten.session(CONVERSATION)


def _write_to_unwritten() -> ChatsError:
    return ChatsError(
        "a chat never written is read through an empty session that takes no writes: "
        "write through Chat.session (it creates the file)"
    )
