"""The runtime's per-chat objects, and the cache that keeps the busy ones open.

An :class:`WorkingChat` is what the runtime holds for one chat while it works on it: the chat's
session and file, the runtime tables of that file, the chat's :class:`EventLog`, its worker
and the run it is executing. (The stored record is :class:`~backend.runtime.records.
Conversation`; this is the live side.)

:class:`WorkingChats` pins at most ``MAX_IDLE_CONVERSATIONS`` idle chats beyond the busy ones
(least recently used released first). Opening is single-flight: two callers opening one chat
at once get the same entry.

Bounded for a server that runs for months: a chat's :class:`EventLog` lives while its chat
is open here *or* someone watches it (``watch`` / ``unwatch``, paired by
``ChatRuntime.subscribe``), so a watcher still replays a reply that ended after the entry was
released; once neither holds, the log is dropped, and a later open or watch starts a fresh
one (numbering from 1: a watcher resuming with an older number replays from the start, see
:mod:`backend.runtime.events`). An entry pins its chat's open file in the directory's cache
(``backend.chats``, itself an LRU of open files), so releasing entries releases files too.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from backend.runtime.events import EventLog
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.ports import ChatPort
from backend.runtime.records import RunRecord
from backend.runtime.run_events import RunEnd, RunPayload
from backend.runtime.state import SessionStateStore
from backend.runtime.store import RuntimeStore
from backend.sessions import Session
from backend.storage import Database

MAX_IDLE_CONVERSATIONS = 32
# The events that end a run: after one, nothing more is published for it.


@dataclass
class ActiveRun:
    """The run a chat is executing right now, in this runtime."""

    run: RunRecord
    task: asyncio.Task[None] | None = None
    cancel_requested: bool = False
    # Stopped by a shutdown rather than by the user: saved as interrupted, not cancelled.
    interrupted: bool = False
    committing: bool = False


@dataclass
class WorkingChat:
    """Per-chat runtime objects: the chat's session and file, runtime tables, event log."""

    chat_id: str
    chat: ChatPort
    session: Session
    database: Database
    store: RuntimeStore
    states: SessionStateStore
    events: EventLog
    worker: asyncio.Task[None] | None = None
    pending: bool = False
    active: ActiveRun | None = None
    # Post-turn work (preview, title) runs beside the queue, not inside the run's lease.
    background: set[asyncio.Task[None]] = field(default_factory=set)
    # The agent version whose budget the installed compaction function was built for.
    compaction_for: tuple[str, int, str] | None = None
    # Compaction id -> children of its last covered message (see window.scan_recent).
    boundaries: dict[str, list[str]] = field(default_factory=dict)
    # Open runs this runtime is not executing (another process's, or still queued), by id:
    # when one ends elsewhere, its end is announced to this runtime's watchers too.
    followed: dict[str, RunRecord] = field(default_factory=dict)
    # Held by an enqueue from its write until its run.queued is published, and by a claim
    # (run_queue): a run is claimable once its transaction commits, and a worker already
    # awake (a watcher's look at the runs woke it, or it drains an earlier run) must not
    # start it before watchers have been told it is queued.
    announcing: asyncio.Lock = field(default_factory=asyncio.Lock)

    def publish(self, run_id: str, payload: RunPayload) -> None:
        """Publish a run event; an end event also stops following that run."""
        if isinstance(payload, RunEnd):
            self.followed.pop(run_id, None)
        self.events.publish(run_id, payload)

    def is_idle(self) -> bool:
        return (
            self.active is None
            and (self.worker is None or self.worker.done())
            and not self.background
        )


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a runtime holds right now (ops, and the soak test's plateau)."""

    open_chats: int  # entries, busy and idle
    busy_chats: int
    event_logs: int
    watchers: int  # subscriptions open


class WorkingChats:
    """Open chats by id (LRU), their event logs, and single-flight opening."""

    def __init__(self, *, max_state_bytes: int, clock: Callable[[], int]) -> None:
        self._max_state_bytes = max_state_bytes
        self._clock = clock
        self._open: OrderedDict[str, WorkingChat] = OrderedDict()
        self._event_logs: dict[str, EventLog] = {}
        self._watchers: dict[str, int] = {}
        self._opening: dict[str, asyncio.Future[WorkingChat]] = {}
        self._used: dict[str, float] = {}  # chat id -> monotonic time it was last opened

    def event_log(self, chat_id: str) -> EventLog:
        return self._event_logs.setdefault(chat_id, EventLog(chat_id))

    def event_logs(self) -> list[EventLog]:
        return list(self._event_logs.values())

    def watch(self, chat_id: str) -> EventLog:
        """The chat's event log, kept until the matching :meth:`unwatch` at least."""
        self._watchers[chat_id] = self._watchers.get(chat_id, 0) + 1
        return self.event_log(chat_id)

    def unwatch(self, chat_id: str) -> None:
        """One watcher fewer; the last one releases the log unless the chat is open."""
        left = self._watchers.get(chat_id, 0) - 1
        if left > 0:
            self._watchers[chat_id] = left
            return
        self._watchers.pop(chat_id, None)
        self._drop_unused_log(chat_id)

    def _drop_unused_log(self, chat_id: str) -> None:
        if chat_id in self._open or chat_id in self._opening or chat_id in self._watchers:
            return
        self._event_logs.pop(chat_id, None)

    def footprint(self) -> Footprint:
        return Footprint(
            open_chats=len(self._open),
            busy_chats=sum(1 for conv in self._open.values() if not conv.is_idle()),
            event_logs=len(self._event_logs),
            watchers=sum(self._watchers.values()),
        )

    def values(self) -> list[WorkingChat]:
        return list(self._open.values())

    def __contains__(self, chat_id: str) -> bool:
        return chat_id in self._open

    def current(self, chat_id: str, chat: ChatPort) -> WorkingChat | None:
        """The open entry of ``chat`` if it is of the same generation (marked recently used)."""
        conv = self._open.get(chat_id)
        if conv is None or conv.chat.generation != chat.generation:
            return None
        self._open.move_to_end(chat_id)
        self._used[chat_id] = time.monotonic()
        return conv

    async def open(self, chat_id: str, chat: ChatPort) -> tuple[WorkingChat, bool]:
        """The entry of ``chat``, built (in a worker thread) if needed: (entry, built now)."""
        pending = self._opening.get(chat_id)
        if pending is not None:
            return await asyncio.shield(pending), False
        future: asyncio.Future[WorkingChat] = asyncio.get_running_loop().create_future()
        self._opening[chat_id] = future
        try:
            conv = await asyncio.to_thread(self._build, chat_id, chat)
            self._open[chat_id] = conv
            self._used[chat_id] = time.monotonic()
            future.set_result(conv)
            self._release_idle()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: the caller below re-raises it
            raise
        finally:
            self._opening.pop(chat_id, None)
        return conv, True

    def _build(self, chat_id: str, chat: ChatPort) -> WorkingChat:
        session = chat.session  # opens (creates) the file first
        database = chat.database
        store = runtime_store_for(database)
        states = SessionStateStore(store, max_bytes=self._max_state_bytes, clock=self._clock)
        return WorkingChat(chat_id, chat, session, database, store, states, self.event_log(chat_id))

    def release_unused(self, idle_s: float) -> int:
        """Release the idle entries nobody watches and nobody opened for ``idle_s``; how many.

        Their files are then unpinned: the directory closes them once unused (its own pass).
        Entries that follow another process's open runs stay, as busy ones do.
        """
        cutoff = time.monotonic() - idle_s
        unused = [
            chat_id
            for chat_id, conv in self._open.items()
            if conv.is_idle()
            and not conv.pending
            and not conv.followed
            and chat_id not in self._watchers
            and self._used.get(chat_id, 0.0) <= cutoff
        ]
        for chat_id in unused:
            self._drop(chat_id)
        return len(unused)

    def _release_idle(self) -> None:
        idle = [chat_id for chat_id, conv in self._open.items() if conv.is_idle()]
        for chat_id in idle[: max(0, len(self._open) - MAX_IDLE_CONVERSATIONS)]:
            self._drop(chat_id)

    def _drop(self, chat_id: str) -> None:
        del self._open[chat_id]
        self._used.pop(chat_id, None)
        self._drop_unused_log(chat_id)
