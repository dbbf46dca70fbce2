"""The conversation runtime: a user message in, a streamed and persisted assistant reply out.

One :class:`ChatRuntime` serves one directory (one user / workspace). It owns, per
conversation, a FIFO of runs executed one at a time under a lease from a
:class:`~backend.runtime.locks.DistributedLockStore`, and an :class:`EventLog` subscribers
replay and follow. Different conversations run in parallel.

Invariants (seed 004 and the spec):

* **Nothing the user wrote is lost.** ``send_message`` stores the user message, an empty
  assistant placeholder (``metadata.status == "queued"``) and the queued run in one
  transaction *before* any model is called. A model failure marks the run ``failed`` and the
  placeholder keeps any partial reply with ``metadata.status == "failed"`` and the error; a
  cancel keeps the partial reply with ``metadata.status == "cancelled"``.
* **Placeholders keep order.** Because the placeholder is stored at enqueue time, a message
  sent while a reply is streaming is appended *after* that reply on the same branch.
* **Serialised per conversation.** At most one running run (also a database invariant); runs
  are claimed oldest enqueue first. The run reads session state at claim time.
* **Atomic turn commit.** The final assistant message, the session-state write (at the
  version read at claim, else ``StaleVersionError``: never merged) and the run record commit
  in one transaction of the chat's SQLite file. If that transaction fails, none of it is
  visible and the run is recorded as failed with the partial reply kept.
* **Interrupted replies end.** A run left ``running`` by a process that stopped (crash, restart,
  dev-mode hot reload) is marked ``failed`` with ``INTERRUPTED_ERROR``, keeping the reply its
  last checkpoint saved, by the next runtime that opens *or watches* the chat; ``run.failed``
  tells its watchers. A run that another live process is writing is left alone.
* **Binding.** A conversation is bound to an agent; ``pinned`` runs exactly the recorded
  version on every resume, ``latest`` the newest at claim time.
* **Frozen context.** Shared memory is read once per turn (fail-soft: unreachable memory
  means an empty block this turn), so a remember in another chat shows up at the next turn.
* **Events.** ``run.queued``, ``run.started``, ``context.compacted``, ``message.delta``,
  ``tool.call``, then one of ``run.completed`` / ``run.failed`` / ``run.cancelled``; numbered
  per conversation and replayable from any sequence number.
* Blocking SQLite work runs in worker threads (``asyncio.to_thread``); the event loop never
  waits on a disk.

Event ``data`` by type (every event also has ``seq``, ``type``, ``chat_id``, ``run_id``, ``at``)::

    run.queued         kind ("send"|"regenerate"|"edit"), user_message_id, assistant_message_id
    run.started        user_message_id, assistant_message_id, agent_id, agent_version, model
    context.compacted  from_message_id, to_message_id, summary_version, tokens_before,
                       tokens_after
    message.delta      message_id (the assistant message), text
    tool.call          assistant_message_id + the AI SDK tool part: type ("tool-<name>"),
                       toolCallId, input, state ("input-available" before the tool runs,
                       then "output-available" with output | "output-error" with errorText)
    run.completed      assistant_message_id, text (the whole reply text)
    run.failed         assistant_message_id, error (a sentence), error_type, partial (bool)
    run.cancelled      assistant_message_id, partial (bool)

Assistant messages carry ``metadata = {"status", "runId", "model", "agent", "error"?}`` with
status ``queued`` / ``running`` (placeholder, parts so far) / ``completed`` / ``failed`` /
``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any

from backend.chats import SNIPPET_END, SNIPPET_START
from backend.chats.text import DEFAULT_TITLE_PREFIX
from backend.config import Settings
from backend.errors import (
    ChatNotFoundError,
    ChatsError,
    InputTooLargeError,
    InvalidInputError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    NotFoundError,
)
from backend.models import (
    ContextItem,
    Finish,
    ModelMessage,
    ModelProvider,
    ModelRequest,
    TextDelta,
    ToolCall,
    heuristic_title,
    provider_from_settings,
)
from backend.providers import RemoteContextProvider
from backend.runtime.agents import DEFAULT_AGENT_ID, AgentDefinition, AgentRegistry
from backend.runtime.compaction import compact_function_for
from backend.runtime.events import EventLog
from backend.runtime.locks import (
    DistributedLockStore,
    InProcessLockStore,
    hold,
    may_be_running,
    process_owner,
)
from backend.runtime.prompt import build_request, history_byte_budget, text_of
from backend.runtime.records import (
    Conversation,
    ModelInfo,
    RunEvent,
    RunKind,
    RunRecord,
    RunStatus,
    RunStatusView,
    RunTicket,
    SessionState,
    ThreadSummary,
    VersionPolicy,
)
from backend.runtime.state import SessionStateHandle, SessionStateStore
from backend.runtime.state_schema import DEFAULT_MAX_STATE_BYTES
from backend.runtime.store import RuntimeStore
from backend.runtime.tools import BUILTIN_TOOLS, Tool, ToolContext, run_tool, tool_part
from backend.sessions import estimate_message_tokens
from backend.storage import join_text, live_text, well_formed_text

log = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 4
# A streaming reply is saved this often, so a crash loses at most this much of it.
DEFAULT_CHECKPOINT_INTERVAL_S = 2.0
RETRIEVAL_LIMIT = 5
MAX_IDLE_CONVERSATIONS = 32
MAX_TRACKED_SUMMARIES = 4
MAX_HEAD_MESSAGES = 3  # the protected head of a compacted thread (sessions' PROTECT_HEAD)
RETRIEVAL_TERMS = 4
PREVIEW_CHARS = 140
TITLE_PROMPT = (
    "Write a short title (at most six words, no quotes, no trailing punctuation) for a chat "
    "that starts like this.\n\nUser: {user}\n\nAssistant: {reply}\n\nTitle:"
)
INTERRUPTED_ERROR = "The app stopped while this reply was being written."


def _now_ms() -> int:
    return int(time.time() * 1000)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass
class _Active:
    """The run a conversation is executing right now."""

    run: RunRecord
    task: asyncio.Task[None] | None = None
    cancel_requested: bool = False
    committing: bool = False


@dataclass
class _Conversation:
    """Per-chat runtime objects: the chat's session and file, runtime tables, event log."""

    chat_id: str
    chat: Any
    session: Any
    db: Any
    store: RuntimeStore
    states: SessionStateStore
    log: EventLog
    worker: asyncio.Task[None] | None = None
    pending: bool = False
    active: _Active | None = None
    # Post-turn work (preview, title) runs beside the queue, not inside the run's lease.
    background: set[asyncio.Task[None]] = field(default_factory=set)
    # The agent version whose budget the installed compaction function was built for.
    compaction_for: tuple[str, int] | None = None
    # Compaction id -> children of its last covered message (see _scan_recent).
    boundaries: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class _Turn:
    """What one run accumulates while it streams."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    checkpointed_at: float = field(default_factory=time.monotonic)
    # A trailing high surrogate not shown yet: half of a pair the next delta completes.
    held: str = ""

    def flush_text(self) -> None:
        if self.text:
            self.parts.append({"type": "text", "text": join_text(self.text)})
            self.text = []

    def all_parts(self) -> list[dict[str, Any]]:
        parts = list(self.parts)
        if self.text:
            parts.append({"type": "text", "text": join_text(self.text)})
        return parts

    def reply_text(self) -> str:
        return "".join(str(p.get("text", "")) for p in self.all_parts() if p.get("type") == "text")


class ChatRuntime:
    """Runs conversations of one directory. Create one per directory and share it.

    ``chats`` is a :class:`backend.chats.Chats` (anything with its API). ``model`` defaults
    to :func:`backend.models.provider_from_settings`.
    """

    def __init__(
        self,
        settings: Settings,
        chats: Any,
        model: ModelProvider | None = None,
        *,
        agents: AgentRegistry | None = None,
        default_agent_id: str | None = None,
        default_version_policy: VersionPolicy = "pinned",
        lock_store: DistributedLockStore | None = None,
        tools: Mapping[str, Tool] | None = None,
        max_state_bytes: int = DEFAULT_MAX_STATE_BYTES,
        tenant_id: str | None = None,
        owner_principal_id: str | None = None,
        lease_ttl_s: float = 30.0,
        checkpoint_interval_s: float = DEFAULT_CHECKPOINT_INTERVAL_S,
        clock_ms: Callable[[], int] = _now_ms,
    ) -> None:
        self.settings = settings
        self.chats = chats
        self.model: ModelProvider = model or provider_from_settings(settings)
        self.agents = agents or AgentRegistry()
        self.default_agent_id = default_agent_id or DEFAULT_AGENT_ID
        self.agents.get(self.default_agent_id)  # fail now, not at the first message
        self.default_version_policy: VersionPolicy = default_version_policy
        self.locks: DistributedLockStore = lock_store or InProcessLockStore()
        self.tools: dict[str, Tool] = dict(BUILTIN_TOOLS if tools is None else tools)
        self.max_state_bytes = max_state_bytes
        directory_id = str(getattr(chats, "directory_id", "") or settings.user_id)
        self.tenant_id = tenant_id or directory_id
        self.owner_principal_id = owner_principal_id or settings.user_id
        self.lease_ttl_s = lease_ttl_s
        self.checkpoint_interval_s = checkpoint_interval_s
        self._clock = clock_ms
        self._owner = _new_id("runtime")
        # Signs the runs this runtime claims, so another process can tell whether it is alive.
        self._claimant = process_owner(self._owner)
        # Open conversations pin their chat file; idle ones beyond MAX_IDLE_CONVERSATIONS are
        # released (least recently used first). Event logs outlive them, for replay.
        self._conversations: OrderedDict[str, _Conversation] = OrderedDict()
        self._logs: dict[str, EventLog] = {}
        self._opening: dict[str, asyncio.Future[_Conversation]] = {}
        self._closed = False

    # ── public API ──────────────────────────────────────────────────

    def model_info(self) -> ModelInfo:
        """What answers: label for the UI, whether it is the offline assistant, model name."""
        return ModelInfo(label=self.model.label, offline=self.model.offline, model=self.model.name)

    async def send_message(
        self,
        chat_id: str,
        text: str,
        *,
        images: Sequence[str] = (),
        attachments: Sequence[Mapping[str, Any]] = (),
        parent_id: str | None = None,
    ) -> RunTicket:
        """Store the user's message and queue a reply; returns once both are durable.

        ``images`` are ``data:`` URLs; ``attachments`` are ready-made AI SDK file parts.
        ``parent_id`` picks the branch to continue (the message to answer after, usually the
        reply on screen); ``None`` continues after the newest message of the chat — which,
        while a reply is queued or streaming, is that reply's placeholder, so the new
        message lands after it.
        """
        parts = self._user_parts(text, images, attachments)
        conv = await self._open(chat_id)
        user_id = _new_id("msg")
        message = {"id": user_id, "role": "user", "parts": parts}
        return await self._enqueue(
            conv, RunKind.SEND, user_message=message, parent_id=parent_id, user_id=user_id
        )

    async def regenerate(self, chat_id: str, assistant_message_id: str) -> RunTicket:
        """Answer the same user message again, as a new sibling of ``assistant_message_id``."""
        conv = await self._open(chat_id)
        path = await asyncio.to_thread(_path_head, conv.session, assistant_message_id, 2)
        if not path or path[0].get("role") != "assistant":
            raise NotFoundError("assistant message", assistant_message_id)
        if len(path) < 2 or path[1].get("role") != "user":
            raise InvalidInputError("only a reply to a user message can be regenerated")
        user_id = str(path[1]["id"])
        return await self._enqueue(conv, RunKind.REGENERATE, user_message=None, user_id=user_id)

    async def edit_message(self, chat_id: str, user_message_id: str, new_text: str) -> RunTicket:
        """Store an edited copy of a user message as its sibling, and answer it."""
        conv = await self._open(chat_id)
        path = await asyncio.to_thread(_path_head, conv.session, user_message_id, 2)
        if not path or path[0].get("role") != "user":
            raise NotFoundError("user message", user_message_id)
        original = path[0]
        kept = [p for p in original.get("parts") or [] if p.get("type") != "text"]
        parts = self._user_parts(new_text, (), kept)
        parent = str(path[1]["id"]) if len(path) > 1 else None
        user_id = _new_id("msg")
        message = {"id": user_id, "role": "user", "parts": parts}
        if isinstance(original.get("metadata"), dict):
            message["metadata"] = {**original["metadata"], "editedFrom": user_message_id}
        else:
            message["metadata"] = {"editedFrom": user_message_id}
        return await self._enqueue(
            conv,
            RunKind.EDIT,
            user_message=message,
            parent_id=parent,
            root=parent is None,
            user_id=user_id,
        )

    async def cancel(
        self, chat_id: str, *, run_id: str | None = None, include_queued: bool = False
    ) -> bool:
        """Stop the running reply (or ``run_id``); True if something was cancelled.

        The partial reply is kept, marked ``cancelled``. Queued runs stay queued unless
        ``include_queued`` (or they are named by ``run_id``).
        """
        conv = await self._open(chat_id)
        cancelled = False
        active = conv.active
        targeted = active is not None and (run_id is None or active.run.id == run_id)
        if targeted and not active.committing and not active.cancel_requested:
            active.cancel_requested = True
            if active.task is not None:
                active.task.cancel()
            cancelled = True
        if run_id is not None and (active is None or active.run.id != run_id):
            run = await asyncio.to_thread(conv.store.load_run, run_id)
            if run.status == RunStatus.QUEUED:
                cancelled = await self._cancel_queued(conv, run)
        elif include_queued:
            for run in await asyncio.to_thread(conv.store.open_runs, chat_id):
                if run.status == RunStatus.QUEUED:
                    cancelled = await self._cancel_queued(conv, run) or cancelled
        return cancelled

    async def subscribe(self, chat_id: str, after_seq: int = 0) -> AsyncIterator[RunEvent]:
        """Every run event of ``chat_id`` after ``after_seq``: buffered ones, then live ones.

        Runs until the runtime closes (or the consumer stops iterating). Watching a chat
        does not create its file. If the file exists, watching first recovers what a stopped
        process left behind (see ``_recover``): a reply it was writing would otherwise show as
        streaming forever to everyone watching, since nothing else finishes it.
        """
        if self._closed:
            raise ChatsError("the runtime is closed")
        chat = await asyncio.to_thread(self.chats.get_chat, chat_id)  # KeyError if not live
        log = self._logs.setdefault(chat_id, EventLog(chat_id))
        await self._recover_watched(chat_id, chat)
        async for event in log.subscribe(after_seq):
            yield event

    async def run_status(self, chat_id: str) -> RunStatusView:
        conv = await self._open(chat_id)
        runs = await asyncio.to_thread(conv.store.open_runs, chat_id)
        running = next((r for r in runs if r.status == RunStatus.RUNNING), None)
        queued = tuple(r for r in runs if r.status == RunStatus.QUEUED)
        return RunStatusView(running=running, queued=queued, last_seq=conv.log.last_seq)

    async def get_run(self, chat_id: str, run_id: str) -> RunRecord:
        conv = await self._open(chat_id)
        return await asyncio.to_thread(conv.store.load_run, run_id)

    async def wait_idle(self, chat_id: str) -> None:
        """Return once ``chat_id`` has no queued or running run (tests, the bench, shutdown)."""
        conv = await self._open(chat_id)
        while True:
            pending = {t for t in (conv.worker, *conv.background) if t and not t.done()}
            if not pending:
                return
            await asyncio.wait(pending)

    async def get_conversation(self, chat_id: str) -> Conversation:
        """The conversation record (created with the default binding on first use)."""
        conv = await self._open(chat_id)
        return await asyncio.to_thread(self._ensure_record, conv)

    async def bind_agent(
        self,
        chat_id: str,
        agent_id: str,
        *,
        policy: VersionPolicy = "pinned",
        version: int | None = None,
    ) -> Conversation:
        """Bind a conversation to an agent. ``pinned`` records ``version`` (default: newest)."""
        agent = self.agents.get(agent_id, version)
        conv = await self._open(chat_id)

        def bind() -> Conversation:
            self._ensure_record(conv)
            conv.store.update_binding(
                chat_id,
                agent.id,
                policy,
                agent.version if policy == "pinned" else None,
                self._clock(),
            )
            record = conv.store.load_conversation(chat_id)
            assert record is not None
            return record

        return await asyncio.to_thread(bind)

    async def set_archived(self, chat_id: str, archived: bool = True) -> Conversation:
        """Mark the conversation record archived (or not); it keeps running if messaged."""
        conv = await self._open(chat_id)

        def archive() -> Conversation:
            self._ensure_record(conv)
            now = self._clock()
            conv.store.set_archived(chat_id, now if archived else None, now)
            record = conv.store.load_conversation(chat_id)
            assert record is not None
            return record

        return await asyncio.to_thread(archive)

    async def get_thread_summary(self, chat_id: str) -> ThreadSummary | None:
        """The thread's newest compacted summary (the session's compaction records)."""
        conv = await self._open(chat_id)
        compactions = await asyncio.to_thread(conv.session.get_compactions)
        if not compactions:
            return None
        newest = compactions[-1]
        return ThreadSummary(
            version=len(compactions),
            summary=newest.summary,
            from_message_id=newest.from_message_id,
            to_message_id=newest.to_message_id,
            created_at=newest.created_at,
        )

    async def get_session_state(self, chat_id: str) -> SessionState:
        conv = await self._open(chat_id)

        def load() -> SessionState:
            self._ensure_record(conv)
            return conv.states.get(chat_id)

        return await asyncio.to_thread(load)

    async def put_session_state(
        self, chat_id: str, state: dict[str, Any], *, expected_version: int
    ) -> SessionState:
        """A trusted, deterministic write (UI or host code): validated, version-checked."""
        conv = await self._open(chat_id)

        def put() -> SessionState:
            record = self._ensure_record(conv)
            agent = self._agent_for(record)
            return conv.states.put(
                chat_id, expected_version=expected_version, state=state, schema=agent.state_schema
            )

        return await asyncio.to_thread(put)

    async def aclose(self) -> None:
        """Cancel running replies (kept as cancelled), wait for workers, end subscriptions."""
        self._closed = True
        for conv in list(self._conversations.values()):
            if conv.active is not None and conv.active.task is not None:
                conv.active.cancel_requested = True
                conv.active.task.cancel()
        for conv in list(self._conversations.values()):
            for task in (conv.worker, *conv.background):
                if task is not None and not task.done():
                    with contextlib.suppress(BaseException):
                        await task
        closer = getattr(self.model, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
        for event_log in self._logs.values():
            event_log.close()

    # ── opening a conversation ──────────────────────────────────────

    async def _open(self, chat_id: str, *, recheck: bool = False) -> _Conversation:
        """The conversation of a live chat; opening it recovers runs left open (``_recover``).

        ``recheck`` recovers again when it is open already: another process may have stopped
        since (a watcher asks for this; a run this runtime claims is never affected).
        """
        if self._closed:
            raise ChatsError("the runtime is closed")
        chat = await asyncio.to_thread(self.chats.get_chat, chat_id)  # KeyError if not live
        conv = self._conversations.get(chat_id)
        generation = getattr(chat, "generation", None)
        if conv is not None and getattr(conv.chat, "generation", None) == generation:
            self._conversations.move_to_end(chat_id)
            if recheck:
                await self._recover(conv)
            return conv
        pending = self._opening.get(chat_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[_Conversation] = asyncio.get_running_loop().create_future()
        self._opening[chat_id] = future
        try:
            conv = await asyncio.to_thread(self._build, chat_id, chat)
            self._conversations[chat_id] = conv
            future.set_result(conv)
            self._release_idle()
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: the caller below re-raises it
            raise
        finally:
            self._opening.pop(chat_id, None)
        await self._recover(conv)
        return conv

    def _build(self, chat_id: str, chat: Any) -> _Conversation:
        session = chat.session
        db = _database_of(chat)
        store = RuntimeStore(db)
        states = SessionStateStore(store, max_bytes=self.max_state_bytes, clock=self._clock)
        log = self._logs.setdefault(chat_id, EventLog(chat_id))
        return _Conversation(chat_id, chat, session, db, store, states, log)

    def _release_idle(self) -> None:
        idle = [
            chat_id
            for chat_id, conv in self._conversations.items()
            if conv.active is None
            and (conv.worker is None or conv.worker.done())
            and not conv.background
        ]
        for chat_id in idle[: max(0, len(self._conversations) - MAX_IDLE_CONVERSATIONS)]:
            del self._conversations[chat_id]

    async def _recover_watched(self, chat_id: str, chat: Any) -> None:
        """Before a watcher replays events: recover the chat's runs, if it has a file at all."""
        try:
            if chat_id not in self._conversations and not await asyncio.to_thread(_has_file, chat):
                return  # never written: no runs (and watching must not create the file)
            await self._open(chat_id, recheck=True)
        except ChatNotFoundError:
            pass  # deleted meanwhile: the subscription simply sees nothing
        except Exception:  # watching still works; the next open retries the recovery
            log.warning("could not recover the runs of chat %s", chat_id, exc_info=True)

    async def _recover(self, conv: _Conversation) -> None:
        """Finish runs a stopped process left running; resume queued runs.

        A running run is orphaned when no lease holds the conversation, this runtime is not
        running it, and the process that claimed it (``RunRecord.claimed_by``) is gone: a
        lease store that is per process cannot see another worker's run, but the pid can. An
        orphan is marked failed with ``INTERRUPTED_ERROR``, keeping the reply its last
        checkpoint saved, and ``run.failed`` tells every watcher (their view of it stops
        "streaming"). Queued runs are resumed unless a live run of another process is still
        ahead of them (its worker takes them next).
        """
        runs = await asyncio.to_thread(conv.store.open_runs, conv.chat_id)
        if not runs:
            return
        holder = await self.locks.holder(_lock_key(conv.chat_id))
        blocked = False
        for run in runs:
            if run.status != RunStatus.RUNNING:
                continue
            if holder is not None or conv.active is not None or may_be_running(run.claimed_by):
                blocked = True
                continue
            finished, partial = await asyncio.to_thread(self._finalize_interrupted, conv, run)
            if finished:
                conv.log.publish(
                    "run.failed",
                    run.id,
                    {
                        "assistant_message_id": run.assistant_message_id,
                        "error": INTERRUPTED_ERROR,
                        "error_type": "",
                        "partial": partial,
                    },
                )
        if not blocked and any(r.status == RunStatus.QUEUED for r in runs):
            self._wake(conv)

    def _finalize_interrupted(self, conv: _Conversation, run: RunRecord) -> tuple[bool, bool]:
        """Fail an orphaned run, keeping the reply saved so far: (finished, partial kept)."""
        with conv.db.transaction():
            saved = conv.session.get_message(run.assistant_message_id) or {}
            turn = _Turn(parts=[dict(p) for p in saved.get("parts") or [] if isinstance(p, dict)])
            finished = self._finalize_failure(conv, run, turn, RunStatus.FAILED, INTERRUPTED_ERROR)
        return finished, bool(turn.parts)

    def _ensure_record(self, conv: _Conversation) -> Conversation:
        record = conv.store.load_conversation(conv.chat_id)
        if record is not None:
            return record
        agent = self.agents.get(self.default_agent_id)
        pinned = self.default_version_policy == "pinned"
        return conv.store.ensure_conversation(
            conv.chat_id,
            tenant_id=self.tenant_id,
            owner_principal_id=self.owner_principal_id,
            participant_ids=(self.owner_principal_id,),
            agent_id=agent.id,
            agent_version_policy=self.default_version_policy,
            agent_version=agent.version if pinned else None,
            title=_chat_title(self.chats, conv.chat_id, default=""),
            now=self._clock(),
        )

    def _agent_for(self, record: Conversation) -> AgentDefinition:
        if record.agent_version_policy == "pinned":
            return self.agents.get(record.agent_id, record.agent_version)
        return self.agents.get(record.agent_id)

    # ── enqueue ─────────────────────────────────────────────────────

    def _user_parts(
        self, text: str, images: Sequence[str], attachments: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:
        if not isinstance(text, str):
            raise TypeError("message text must be a string")
        size = len(text.encode("utf-8", "surrogatepass"))  # a lone surrogate is no error
        if size > self.settings.max_message_bytes:
            raise InputTooLargeError("message", size, self.settings.max_message_bytes)
        parts: list[dict[str, Any]] = [dict(p) for p in attachments]
        for url in images:
            media_type = url[5:].split(";", 1)[0] if url.startswith("data:") else "image/*"
            parts.append({"type": "file", "mediaType": media_type, "url": url})
        if text.strip():
            parts.append({"type": "text", "text": text})
        if not parts:
            raise InvalidInputError("an empty message cannot be sent")
        return parts

    async def _enqueue(
        self,
        conv: _Conversation,
        kind: RunKind,
        *,
        user_message: dict[str, Any] | None,
        user_id: str,
        parent_id: Any = None,
        root: bool = False,
    ) -> RunTicket:
        run_id = _new_id("run")
        assistant_id = _new_id("msg")

        def write() -> RunRecord:
            record = self._ensure_record(conv)
            agent = self._agent_for(record)
            placeholder = {
                "id": assistant_id,
                "role": "assistant",
                "parts": [],
                "metadata": {"status": "queued", "runId": run_id},
            }
            with conv.db.transaction():
                if user_message is not None:
                    if root:
                        conv.session.append_message(user_message, parent_id=None)
                    elif parent_id is not None:
                        conv.session.append_message(user_message, parent_id=parent_id)
                    else:
                        conv.session.append_message(user_message)
                conv.session.append_message(placeholder, parent_id=user_id)
                return conv.store.enqueue_run(
                    run_id=run_id,
                    conversation_id=conv.chat_id,
                    kind=kind,
                    user_message_id=user_id,
                    assistant_message_id=assistant_id,
                    agent_id=agent.id,
                    agent_version=agent.version,
                    now=self._clock(),
                )

        run = await asyncio.to_thread(write)
        conv.log.publish(
            "run.queued",
            run.id,
            {
                "kind": kind.value,
                "user_message_id": user_id,
                "assistant_message_id": assistant_id,
            },
        )
        self._wake(conv)
        return RunTicket(conv.chat_id, run.id, user_id, assistant_id)

    async def _cancel_queued(self, conv: _Conversation, run: RunRecord) -> bool:
        done = await asyncio.to_thread(
            self._finalize_failure, conv, run, _Turn(), RunStatus.CANCELLED, None
        )
        if done:
            conv.log.publish(
                "run.cancelled",
                run.id,
                {"assistant_message_id": run.assistant_message_id, "partial": False},
            )
        return done

    # ── the worker: one per busy conversation ───────────────────────

    def _wake(self, conv: _Conversation) -> None:
        conv.pending = True
        if conv.worker is None or conv.worker.done():
            conv.worker = asyncio.ensure_future(self._drain(conv))

    async def _drain(self, conv: _Conversation) -> None:
        # One lease owner per worker: even two workers of this process (a conversation
        # rebuilt while an old handle still drains) never run a turn at the same time.
        owner = f"{self._owner}:{uuid.uuid4().hex[:8]}"
        try:
            while not self._closed:
                conv.pending = False
                async with hold(self.locks, _lock_key(conv.chat_id), owner, ttl_s=self.lease_ttl_s):
                    claimed = await asyncio.to_thread(self._claim, conv)
                    if claimed is not None:
                        run, agent, handle = claimed
                        active = _Active(run)
                        conv.active = active
                        active.task = asyncio.ensure_future(
                            self._execute(conv, active, agent, handle)
                        )
                        try:
                            await asyncio.shield(active.task)
                        finally:
                            conv.active = None
                if claimed is None and not conv.pending:
                    return
        except Exception:
            log.exception("run worker of chat %s failed", conv.chat_id)

    def _claim(
        self, conv: _Conversation
    ) -> tuple[RunRecord, AgentDefinition, SessionStateHandle] | None:
        """Claim the oldest queued run and read what it runs with (agent, state) — one go."""
        record = self._ensure_record(conv)
        agent = self._agent_for(record)
        with conv.db.transaction():
            run = conv.store.claim_next_run(
                conv.chat_id,
                agent_id=agent.id,
                agent_version=agent.version,
                now=self._clock(),
                claimed_by=self._claimant,
            )
            if run is None:
                return None
            handle = conv.states.open(conv.chat_id, agent.state_schema)
            conv.store.set_last_run(conv.chat_id, run.id, self._clock())
            placeholder = conv.session.get_message(run.assistant_message_id)
            if placeholder is not None:
                metadata = dict(placeholder.get("metadata") or {})
                metadata.update(status="running", runId=run.id)
                conv.session.update_message({**placeholder, "metadata": metadata})
        return run, agent, handle

    # ── executing one run ───────────────────────────────────────────

    async def _execute(
        self,
        conv: _Conversation,
        active: _Active,
        agent: AgentDefinition,
        handle: SessionStateHandle,
    ) -> None:
        run = active.run
        turn = _Turn()
        conv.log.publish(
            "run.started",
            run.id,
            {
                "user_message_id": run.user_message_id,
                "assistant_message_id": run.assistant_message_id,
                "agent_id": agent.id,
                "agent_version": agent.version,
                "model": self.model.name,
            },
        )
        try:
            scan = await self._window(conv, run, agent)
            history = scan.window
            user_text = text_of(history[-1]) if history else ""
            memory = await self._frozen_memory(agent)
            retrieved = await self._retrieve(conv, run, user_text)
            tools = {name: self.tools[name] for name in agent.tools if name in self.tools}
            context = ToolContext(conv.chat_id, handle, self._remember_fn(agent))
            extra: list[ModelMessage] = []
            for _round in range(MAX_TOOL_ROUNDS + 1):
                request = build_request(
                    agent=agent,
                    history=history,
                    tools=[t.spec for t in tools.values()] if _round < MAX_TOOL_ROUNDS else [],
                    memory=memory,
                    retrieved=retrieved,
                    state=handle.data,
                    summary=scan.summary,
                    chat_id=conv.chat_id,
                    run_id=run.id,
                )
                if extra:
                    request = _with_extra(request, extra)
                calls = await self._stream_once(conv, run, request, turn)
                if not calls:
                    break
                turn.flush_text()
                results: list[ModelMessage] = []
                for call in calls:
                    conv.log.publish(
                        "tool.call",
                        run.id,
                        {
                            "assistant_message_id": run.assistant_message_id,
                            "type": f"tool-{call.name}",
                            "toolCallId": call.id,
                            "state": "input-available",
                            "input": call.arguments,
                        },
                    )
                    output, error = await run_tool(tools, context, call)
                    part = tool_part(call, output, error)
                    turn.parts.append(part)
                    conv.log.publish(
                        "tool.call",
                        run.id,
                        {"assistant_message_id": run.assistant_message_id, **part},
                    )
                    results.append(
                        ModelMessage(
                            "tool",
                            _json({"error": error} if error else output),
                            tool_call_id=call.id,
                        )
                    )
                extra += [ModelMessage("assistant", "", tool_calls=tuple(calls)), *results]
            active.committing = True
            await asyncio.to_thread(self._commit, conv, run, turn, handle, agent)
        except asyncio.CancelledError:
            if not active.cancel_requested:
                raise
            active.committing = True
            await self._fail(conv, run, turn, RunStatus.CANCELLED, None)
            return
        except Exception as exc:
            active.committing = True
            if not isinstance(exc, ChatsError):
                log.exception("run %s of chat %s failed", run.id, conv.chat_id)
            await self._fail(conv, run, turn, RunStatus.FAILED, exc)
            return
        conv.log.publish(
            "run.completed",
            run.id,
            {
                "assistant_message_id": run.assistant_message_id,
                "text": well_formed_text(turn.reply_text()),  # events leave as UTF-8
            },
        )
        task = asyncio.ensure_future(self._after_turn(conv, run, turn, user_text))
        conv.background.add(task)
        task.add_done_callback(conv.background.discard)

    async def _stream_once(
        self, conv: _Conversation, run: RunRecord, request: ModelRequest, turn: _Turn
    ) -> list[ToolCall]:
        calls: list[ToolCall] = []
        # aclosing: leaving early (Finish, cancel, error) closes the HTTP response at once
        # instead of whenever the abandoned generator is collected.
        async with contextlib.aclosing(self.model.stream(request)) as events:
            async for event in events:
                if isinstance(event, Finish):
                    break
                if isinstance(event, ToolCall):
                    calls.append(event)
                elif isinstance(event, TextDelta) and event.text:
                    self._on_delta(conv, run, turn, event.text)
                    if time.monotonic() - turn.checkpointed_at >= self.checkpoint_interval_s:
                        turn.checkpointed_at = time.monotonic()
                        await asyncio.to_thread(self._checkpoint, conv, run, turn)
        return calls

    def _on_delta(self, conv: _Conversation, run: RunRecord, turn: _Turn, text: str) -> None:
        turn.text.append(text)
        shown, turn.held = live_text(turn.held, text)  # live text is well-formed Unicode
        if shown:
            conv.log.publish(
                "message.delta", run.id, {"message_id": run.assistant_message_id, "text": shown}
            )

    def _checkpoint(self, conv: _Conversation, run: RunRecord, turn: _Turn) -> None:
        """Save the reply so far (status still ``running``) while the run is still running.

        The check and the write share a transaction, so a checkpoint that loses the race with
        the run's end (a cancel, a failure) never overwrites the final state.
        """
        message = self._final_message(conv, run, turn, {"status": "running"})
        with conv.db.transaction():
            if conv.store.load_run(run.id).status == RunStatus.RUNNING:
                conv.session.update_message(message)

    def _commit(
        self,
        conv: _Conversation,
        run: RunRecord,
        turn: _Turn,
        handle: SessionStateHandle,
        agent: AgentDefinition,
    ) -> None:
        """Final message + session state + run record: one transaction, all or nothing."""
        message = self._final_message(conv, run, turn, {"status": "completed"})
        now = self._clock()
        with conv.db.transaction():
            conv.session.update_message(message)
            handle.commit()
            conv.store.finish_run(run.id, RunStatus.COMPLETED, now=now)
            conv.store.set_last_run(conv.chat_id, run.id, now)

    async def _fail(
        self,
        conv: _Conversation,
        run: RunRecord,
        turn: _Turn,
        status: RunStatus,
        exc: BaseException | None,
    ) -> None:
        error = well_formed_text(_describe(exc)) if exc is not None else None
        try:
            await asyncio.shield(
                asyncio.to_thread(self._finalize_failure, conv, run, turn, status, error)
            )
        except Exception:
            log.exception("could not record the end of run %s", run.id)
        data: dict[str, Any] = {
            "assistant_message_id": run.assistant_message_id,
            "partial": bool(turn.all_parts()),
        }
        if status == RunStatus.FAILED:
            data["error"] = error
            data["error_type"] = type(exc).__name__ if exc is not None else ""
            conv.log.publish("run.failed", run.id, data)
        else:
            conv.log.publish("run.cancelled", run.id, data)
        with contextlib.suppress(Exception):
            await self._record_turn(conv, turn.reply_text())

    def _finalize_failure(
        self,
        conv: _Conversation,
        run: RunRecord,
        turn: _Turn,
        status: RunStatus,
        error: str | None,
    ) -> bool:
        """Keep the partial reply, marked; state changes of an unfinished turn are dropped."""
        extra: dict[str, Any] = {"status": status.value}
        if error:
            extra["error"] = error
        message = self._final_message(conv, run, turn, extra)
        with conv.db.transaction():
            finished = conv.store.finish_run(run.id, status, now=self._clock(), error=error)
            if finished:
                conv.session.update_message(message)
        return finished

    def _final_message(
        self, conv: _Conversation, run: RunRecord, turn: _Turn, extra: dict[str, Any]
    ) -> dict[str, Any]:
        metadata = {"runId": run.id, "model": self.model.name, **extra}
        if run.agent_id:
            metadata["agent"] = f"{run.agent_id}@{run.agent_version}"
        return {
            "id": run.assistant_message_id,
            "role": "assistant",
            "parts": turn.all_parts(),
            "metadata": metadata,
        }

    # ── turn material ───────────────────────────────────────────────

    async def _frozen_memory(self, agent: AgentDefinition) -> dict[str, str | None]:
        """Each context block read once for the whole turn; unreachable → empty (fail-soft)."""
        memory: dict[str, str | None] = {}
        for block in agent.context_blocks:
            provider = _context_provider(self.chats, block.label)
            try:
                memory[block.label] = await asyncio.to_thread(provider.get)
            except Exception:  # get() is fail-soft already; belt and braces for adapters
                memory[block.label] = None
        return memory

    def _remember_fn(self, agent: AgentDefinition) -> Callable[[str], Any]:
        label = agent.context_blocks[0].label if agent.context_blocks else "user_memory"
        provider = _context_provider(self.chats, label)

        async def remember(fact: str) -> None:
            await asyncio.to_thread(provider.append, f"- {fact}\n")

        return remember

    async def _retrieve(
        self, conv: _Conversation, run: RunRecord, user_text: str
    ) -> list[ContextItem]:
        query = self.model.retrieval_query(user_text) if user_text else None
        if not query:
            return []
        try:
            return await asyncio.to_thread(self._search, conv, run, query)
        except Exception:  # retrieval is an aid: a failing search must not fail the turn
            log.warning("retrieval failed for chat %s", conv.chat_id, exc_info=True)
            return []

    def _search(self, conv: _Conversation, run: RunRecord, query: str) -> list[ContextItem]:
        """Past *user* messages matching the query's words, most words matched first.

        The directory matches phrases, so each word is searched on its own and the hits are
        merged. Only what the user wrote is quoted back ("what did I say about ..."): an
        assistant reply that merely repeats the words is not a source.
        """
        own = {run.user_message_id, run.assistant_message_id}
        scores: dict[tuple[str, str], tuple[int, float, str]] = {}
        for term in query.split()[:RETRIEVAL_TERMS]:
            for hit in self.chats.search_messages(term, limit=RETRIEVAL_LIMIT * 4):
                if hit.message_id in own:
                    continue
                key = (hit.chat_id, hit.message_id)
                matched, rank, snippet = scores.get(key, (0, hit.rank, hit.snippet))
                scores[key] = (matched + 1, min(rank, hit.rank), snippet)
        ordered = sorted(scores.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        titles: dict[str, str] = {}
        items: list[ContextItem] = []
        for (chat_id, message_id), (_matched, _rank, snippet) in ordered:
            message = _load_message(self.chats, chat_id, message_id)
            if message is None or message.get("role") != "user":
                continue
            if chat_id not in titles:
                titles[chat_id] = _chat_title(self.chats, chat_id)
            text = text_of(message) or _plain_snippet(snippet)
            items.append(ContextItem(text, source=titles[chat_id], ref=f"{chat_id}/{message_id}"))
            if len(items) >= RETRIEVAL_LIMIT:
                break
        return items

    async def _window(self, conv: _Conversation, run: RunRecord, agent: AgentDefinition) -> _Scan:
        """The turn's recent history; compacts the thread first when it is over the budget.

        One newest-first scan decides both, so a turn reads O(budget) rows however long the
        thread is; only an actual compaction reads the whole branch (a one-off per summary).
        """
        threshold = agent.model.compact_after_tokens
        budget = history_byte_budget(agent)
        scan = await asyncio.to_thread(
            _scan_recent, conv.session, run.user_message_id, budget, threshold, conv.boundaries
        )
        if threshold is None or scan.tokens <= threshold:
            return scan
        self._install_compaction(conv, agent)
        result = await asyncio.to_thread(conv.session.compact, run.user_message_id)
        if result is None:  # nothing worth summarising (too few turns): go on uncompacted
            return scan
        after = await asyncio.to_thread(
            _scan_recent, conv.session, run.user_message_id, budget, threshold, conv.boundaries
        )
        version = await asyncio.to_thread(lambda: len(conv.session.get_compactions()))
        conv.log.publish(
            "context.compacted",
            run.id,
            {
                "from_message_id": result.from_message_id,
                "to_message_id": result.to_message_id,
                "summary_version": version,
                "tokens_before": scan.tokens,
                "tokens_after": after.tokens,
            },
        )
        return after

    def _install_compaction(self, conv: _Conversation, agent: AgentDefinition) -> None:
        if conv.compaction_for == (agent.id, agent.version):
            return
        from backend.sessions import CompactResult, create_compact_function

        fn = compact_function_for(
            self.model,
            loop=asyncio.get_running_loop(),
            keep_recent_tokens=agent.model.keep_recent_tokens,
            create_compact_function=create_compact_function,
            compact_result=CompactResult,
        )
        conv.session.on_compaction(fn)
        conv.compaction_for = (agent.id, agent.version)

    # ── after a completed turn ──────────────────────────────────────

    async def _after_turn(
        self, conv: _Conversation, run: RunRecord, turn: _Turn, user_text: str
    ) -> None:
        reply = turn.reply_text()
        try:
            await self._record_turn(conv, reply or user_text)
            if await asyncio.to_thread(self._wants_title, conv):
                title = await self._title(user_text, reply)
                await asyncio.to_thread(self._set_title, conv, title)
        except Exception:  # the reply is committed; sidebar niceties must not fail it
            log.warning("post-turn update failed for chat %s", conv.chat_id, exc_info=True)

    async def _record_turn(self, conv: _Conversation, text: str) -> None:
        preview = " ".join(text.split())[:PREVIEW_CHARS]
        await asyncio.to_thread(self.chats.record_chat_turn, conv.chat_id, preview)

    async def _title(self, user_text: str, reply: str) -> str:
        fallback = heuristic_title(user_text or reply)
        if self.model.offline:
            return fallback
        try:
            prompt = TITLE_PROMPT.format(user=user_text[:1000], reply=reply[:1000])
            raw = await asyncio.wait_for(self.model.complete(prompt), timeout=30)
        except (ModelError, TimeoutError):
            return fallback
        title = " ".join(raw.split()).strip(" \"'“”.").removeprefix("Title:").strip()
        return title[:60] or fallback

    def _wants_title(self, conv: _Conversation) -> bool:
        """After the first completed exchange, while the chat still has a default title.

        A title the user chose (at creation or by renaming, even mid-reply) is never replaced.
        """
        if conv.store.count_runs(conv.chat_id, RunStatus.COMPLETED) != 1:
            return False
        current = _chat_title(self.chats, conv.chat_id, default=None)
        return current is not None and _is_default_title(current)

    def _set_title(self, conv: _Conversation, title: str) -> None:
        self.chats.rename_chat(conv.chat_id, title)
        conv.store.set_title(conv.chat_id, title, self._clock())


# ── helpers (module level: used from worker threads) ────────────────


def _lock_key(chat_id: str) -> str:
    return f"chats:conversation:{chat_id}"


def _database_of(chat: Any) -> Any:
    """The chat file's :class:`Database`, so runtime tables share its transactions."""
    for candidate in (
        getattr(chat, "database", None),
        getattr(getattr(chat, "sessions", None), "database", None),
        getattr(chat.session, "database", None),
        getattr(getattr(chat.session, "sessions", None), "database", None),
    ):
        if candidate is not None:
            return candidate
    raise TypeError("the chat handle exposes no database for the runtime tables")


def _has_file(chat: Any) -> bool:
    """Whether the chat's file exists (a handle that cannot tell is taken to have one)."""
    return bool(getattr(chat, "has_file", True))


def _context_provider(chats: Any, label: str) -> RemoteContextProvider:
    """A fail-soft view of one shared-context block of the directory (RFC edge cases 7-10)."""
    provider = RemoteContextProvider(chats)
    provider.init(label)
    return provider


def _path_head(session: Any, message_id: str, count: int) -> list[dict[str, Any]]:
    """``message_id`` and its nearest ancestors, newest first (reads only ``count`` rows)."""
    return list(islice(session.history(leaf_id=message_id, newest_first=True), count))


@dataclass
class _Scan:
    window: list[dict[str, Any]]
    tokens: int  # estimate of the branch up to the leaf; a lower bound once over threshold
    summary: str | None = None  # the thread summary covering what the window leaves out


def _scan_recent(
    session: Any,
    leaf_id: str,
    byte_budget: int,
    token_threshold: int | None,
    boundary_cache: dict[str, list[str]] | None = None,
) -> _Scan:
    """Newest-first walk from ``leaf_id``: the prompt window and a bounded token estimate.

    The window holds the newest messages worth at most ``byte_budget`` bytes (the newest is
    always in). The walk goes on past the window only until it knows whether the branch is
    over ``token_threshold``, and it stops at the thread summary.

    The summary boundary is found *before* the store reaches it: the children of each
    summary's last covered message are known up front (a point read per summary), so the
    walk stops on that child and never pulls the covered message itself. Pulling it would
    make the store read every id of the remaining path to plan overlays (O(thread length));
    and past its 10,000-row walk cap the store stops applying overlays that start near the
    root at all. The messages before the summarised range (the head that set the task) are
    then read from the range's start, a few point reads. So a turn costs the same at 10 or
    10,000 messages, where ``get_recent_history`` / ``token_estimate`` size the whole path.

    ``boundary_cache`` (compaction id → child ids) is kept per conversation: finding children
    is a scan of the message table in the store, so it is paid once per summary. A branch
    created later under a covered message is merely not recognised; the walk then falls back
    to the store's own overlay (correct, just slower).
    """
    cache = boundary_cache if boundary_cache is not None else {}
    boundaries: dict[str, Any] = {}
    for compaction in session.get_compactions()[-MAX_TRACKED_SUMMARIES:]:  # newest wins
        if compaction.id not in cache:
            children = session.get_branches(compaction.to_message_id)
            cache[compaction.id] = [str(child["id"]) for child in children]
        for child_id in cache[compaction.id]:
            boundaries[child_id] = compaction
    window: list[dict[str, Any]] = []
    used = 0
    tokens = 0
    window_full = False
    reached: Any = None
    for message in session.history(leaf_id=leaf_id, newest_first=True):
        message_id = str(message.get("id", ""))
        if message_id.startswith("compaction_"):  # an overlay the store did apply
            reached = _OverlaySummary(text_of(message))
            break
        tokens += estimate_message_tokens([message])
        if not window_full:
            size = len(_json(message).encode("utf-8", "surrogatepass"))
            if window and used + size > byte_budget:
                window_full = True
            else:
                window.append(message)
                used += size
        if message_id in boundaries:
            reached = boundaries[message_id]
            break
        if window_full and (token_threshold is None or tokens > token_threshold):
            break
    window.reverse()
    if reached is None:
        return _Scan(window, tokens)
    summary = reached.summary
    tokens += estimate_message_tokens([{"role": "assistant", "parts": [_text_part(summary)]}])
    head: list[dict[str, Any]] = []
    if isinstance(reached, _OverlaySummary):
        return _Scan(window, tokens, summary)
    older = session.history(leaf_id=reached.from_message_id, newest_first=True)
    for message in islice(older, 1, 1 + MAX_HEAD_MESSAGES):
        head.append(message)
        tokens += estimate_message_tokens([message])
    head.reverse()
    if not window_full:
        window = head + window
    return _Scan(window, tokens, summary)


@dataclass
class _OverlaySummary:
    summary: str


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _chat_title(chats: Any, chat_id: str, default: str | None = "another chat") -> str | None:
    try:
        return str(chats.get_summary(chat_id).title)
    except Exception:  # a deleted chat, a directory without summaries: no title to show
        return default


def _is_default_title(title: str) -> bool:
    return not title.strip() or title.startswith(DEFAULT_TITLE_PREFIX) or title == "New chat"


def _load_message(chats: Any, chat_id: str, message_id: str) -> dict[str, Any] | None:
    try:
        return chats.get_chat(chat_id).session.get_message(message_id)
    except Exception:  # deleted since it was indexed, or unreadable: skip the hit
        return None


def _plain_snippet(snippet: str) -> str:
    return snippet.replace(SNIPPET_START, "").replace(SNIPPET_END, "")


def _with_extra(request: ModelRequest, extra: Sequence[ModelMessage]) -> ModelRequest:
    return replace(request, messages=(*request.messages, *extra))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _describe(exc: BaseException) -> str:
    """A sentence for the UI."""
    if isinstance(exc, ModelHTTPError):
        return f"The model server answered HTTP {exc.status_code}: {_error_detail(exc.body)}"
    if isinstance(exc, ModelTimeoutError):
        return f"The model did not answer in time. ({exc})"
    if isinstance(exc, ModelError):
        return f"The model failed: {exc}"
    if isinstance(exc, ChatsError):
        return str(exc)
    return f"Unexpected error: {type(exc).__name__}: {exc}"


def _error_detail(body: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's start."""
    try:
        parsed = json.loads(body)
    except (ValueError, TypeError):
        return body.strip()[:300] or "no details"
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    return body.strip()[:300]
