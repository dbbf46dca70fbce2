"""The conversation runtime: a user message in, a streamed and persisted assistant reply out.

One :class:`ChatRuntime` serves one directory (one user / workspace): a thin facade over
modules with one concern each (listed in ``backend/runtime/__init__.py``), talking to the
directory only through :class:`~backend.runtime.ports.DirectoryPort`.

Invariants (seed 004 and the spec), and where each is kept:

* **Nothing the user wrote is lost** (``run_queue``): the user message, an empty assistant
  placeholder and the queued run are stored in one transaction before any model is called. A
  model failure marks the run ``failed`` and the placeholder keeps any partial reply with
  ``metadata.status == "failed"`` and the error; a cancel keeps the partial reply with
  ``metadata.status == "cancelled"``.
* **Serialised per conversation** (``run_queue``): at most one running run, oldest enqueue
  first, across processes too. Different conversations run in parallel.
* **Atomic turn commit** (``turn``): the final assistant message, the session-state write (at
  the version read at claim, else ``StaleVersionError``: never merged) and the run record
  commit in one transaction of the chat's SQLite file.
* **Interrupted replies end** (``recovery``): a run left ``running`` by a process that stopped
  is marked ``failed`` with ``INTERRUPTED_ERROR`` by the next runtime that opens, watches or
  queues on the chat; a run another live process is writing is left alone, and its end is
  announced to this runtime's watchers when it comes.
* **A clean stop reads the same** (``shutdown``): :meth:`ChatRuntime.shutdown` saves every
  streaming reply as interrupted, publishes its end, and leaves queued runs queued.
* **Binding** (``bindings``): ``pinned`` runs exactly the recorded agent version on every
  resume, ``latest`` the newest at claim time.
* Blocking SQLite work runs in worker threads: the event loop never waits on a disk.

Events and their ``data``, and the metadata of assistant messages: :mod:`backend.runtime.events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from backend.clock import now_ms
from backend.config import Settings
from backend.errors import (
    ChatNotFoundError,
    ChatsError,
    InvalidInputError,
    NotFoundError,
)
from backend.messages import Author
from backend.models import ModelProvider, ModelRef, provider_from_settings
from backend.runtime.agents import AgentRegistry, AgentSource
from backend.runtime.bindings import Bindings
from backend.runtime.compaction import thread_summary
from backend.runtime.events import PublishedRunEvent
from backend.runtime.execute import DEFAULT_CHECKPOINT_INTERVAL_S, TurnExecutor
from backend.runtime.locks import DistributedLockStore, InProcessLockStore, process_owner
from backend.runtime.meter import ChatHeader, ContextMeter, measure_next_turn
from backend.runtime.model_choice import ModelSource, SingleModel
from backend.runtime.ports import DirectoryPort
from backend.runtime.project_context import ProjectSource
from backend.runtime.records import (
    AgentBinding,
    Conversation,
    RunKind,
    RunRecord,
    RunStatus,
    RunStatusView,
    RunTicket,
    SessionState,
    ThreadSummary,
    VersionPolicy,
)
from backend.runtime.recovery import Recovery
from backend.runtime.retrieval import Retriever
from backend.runtime.run_queue import NewMessage, RunQueue, new_id
from backend.runtime.shutdown import DEFAULT_SHUTDOWN_GRACE_S, stop_chats
from backend.runtime.state_schema import DEFAULT_MAX_STATE_BYTES
from backend.runtime.titles import TurnFollowUp
from backend.runtime.tools import BUILTIN_TOOLS, Tool
from backend.runtime.turn import TurnWriter
from backend.runtime.user_messages import edited_copy, new_user_message, user_parts
from backend.runtime.window import HistoryWindow, path_head
from backend.runtime.working_chats import ActiveRun, Footprint, WorkingChat, WorkingChats

logger = logging.getLogger(__name__)


class ChatRuntime:
    """Runs conversations of one directory. Create one per directory and share it.

    ``chats`` is the directory (a :class:`backend.chats.Chats`, or anything that implements
    :class:`~backend.runtime.ports.DirectoryPort`). ``models`` says which models chats may
    use (``backend.endpoints.ModelEndpoints``); without it every chat is answered by
    ``model``, which defaults to :func:`backend.models.provider_from_settings`. ``agents`` is
    an :class:`AgentSource`: a registry, or the user's library (``LibraryAgents``).

    Shared chats (``docs/sharing.md``): ``owner_name`` is what the owner's messages show;
    ``participants`` and ``owner_context`` come from ``Sharing.run_hooks`` (without them every
    chat has the owner alone, and every run may read the owner's memory and other chats).
    """

    def __init__(
        self,
        settings: Settings,
        chats: DirectoryPort,
        model: ModelProvider | None = None,
        *,
        models: ModelSource | None = None,
        agents: AgentSource | None = None,
        default_agent_id: str | None = None,
        default_version_policy: VersionPolicy = "pinned",
        lock_store: DistributedLockStore | None = None,
        tools: Mapping[str, Tool] | None = None,
        max_state_bytes: int = DEFAULT_MAX_STATE_BYTES,
        tenant_id: str | None = None,
        owner_principal_id: str | None = None,
        owner_name: str | None = None,
        participants: Callable[[str], Sequence[str]] | None = None,
        owner_context: Callable[[str], bool] | None = None,
        lease_ttl_s: float = 30.0,
        checkpoint_interval_s: float = DEFAULT_CHECKPOINT_INTERVAL_S,
        clock_ms: Callable[[], int] = now_ms,
        projects: ProjectSource | None = None,
    ) -> None:
        self.settings = settings
        self.projects = projects  # the directory's projects (backend.projects), if any
        self.chats = chats
        if models is None:
            models = SingleModel(model or provider_from_settings(settings))
        self.models = models
        self.model: ModelProvider = model or models.provider_for(models.default_ref())
        self.agents: AgentSource = agents or AgentRegistry()
        self.agents.get(default_agent_id or self.agents.default_id())  # fail now, not later
        self.locks: DistributedLockStore = lock_store or InProcessLockStore()
        self.tools: dict[str, Tool] = dict(BUILTIN_TOOLS if tools is None else tools)
        self._bindings = Bindings(
            chats,
            self.agents,
            models,
            default_agent_id=default_agent_id,
            default_version_policy=default_version_policy,
            tenant_id=tenant_id or chats.directory_id or settings.user_id,
            owner_principal_id=owner_principal_id or chats.directory_id or settings.user_id,
            participants=participants,
            owner_context=owner_context,
            clock=clock_ms,
        )
        owner_id = self._bindings.owner_principal_id
        self.owner = Author(id=owner_id, name=owner_name or owner_id)
        writer = TurnWriter(self.model.name, clock_ms)
        executor = TurnExecutor(
            directory=chats,
            models=models,
            tools=self.tools,
            writer=writer,
            window=HistoryWindow(),
            retriever=Retriever(chats),
            follow_up=TurnFollowUp(chats, clock_ms),
            checkpoint_interval_s=checkpoint_interval_s,
            owner_context=self._bindings.may_use_owner_context,
            projects=projects,
        )
        self._recovery = Recovery(self.locks, writer)
        owner = new_id("runtime")
        self._queue = RunQueue(
            bindings=self._bindings,
            executor=executor,
            recovery=self._recovery,
            writer=writer,
            locks=self.locks,
            owner=owner,
            claimant=process_owner(owner),
            lease_ttl_s=lease_ttl_s,
            clock=clock_ms,
        )
        self._working = WorkingChats(max_state_bytes=max_state_bytes, clock=clock_ms)
        self._closed = False

    # ── messages and runs ───────────────────────────────────────────

    async def send_message(
        self,
        chat_id: str,
        text: str,
        *,
        images: Sequence[str] = (),
        attachments: Sequence[Mapping[str, Any]] = (),
        parent_id: str | None = None,
        author: Author | None = None,
    ) -> RunTicket:
        """Store the user's message and queue a reply; returns once both are durable.

        ``images`` are ``data:`` URLs; ``attachments`` are ready-made AI SDK file parts.
        ``parent_id`` picks the branch to continue (the message to answer after, usually the
        reply on screen); ``None`` continues after the newest message of the chat — which,
        while a reply is queued or streaming, is that reply's placeholder, so the new
        message lands after it.

        ``author`` (authorized by the caller; default the owner) is stored as the message's
        ``metadata.author`` and the reply's ``metadata.requestedBy``.
        """
        parts = user_parts(self.settings, text, images, attachments)
        conv = await self._open(chat_id)
        user_message_id = new_id("msg")
        sender = author or self.owner
        message = new_user_message(user_message_id, parts, sender)
        return await self._queue.enqueue(
            conv,
            RunKind.SEND,
            user_message_id=user_message_id,
            new_message=NewMessage(message, parent_id=parent_id),
            requested_by=sender,
        )

    async def regenerate(
        self, chat_id: str, assistant_message_id: str, *, author: Author | None = None
    ) -> RunTicket:
        """Answer the same user message again, as a new sibling of ``assistant_message_id``;
        the reply records ``author`` (default the owner) as who asked (``requestedBy``)."""
        conv = await self._open(chat_id)
        path = await asyncio.to_thread(path_head, conv.session, assistant_message_id, 2)
        if not path or path[0].get("role") != "assistant":
            raise NotFoundError("assistant message", assistant_message_id)
        if len(path) < 2 or path[1].get("role") != "user":
            raise InvalidInputError("only a reply to a user message can be regenerated")
        user_message_id = str(path[1]["id"])
        return await self._queue.enqueue(
            conv,
            RunKind.REGENERATE,
            user_message_id=user_message_id,
            requested_by=author or self.owner,
        )

    async def edit_message(
        self,
        chat_id: str,
        user_message_id: str,
        new_text: str,
        *,
        author: Author | None = None,
    ) -> RunTicket:
        """Store an edited copy of a user message as its sibling, and answer it. The copy's
        author is who edited it (``author``, default the owner)."""
        conv = await self._open(chat_id)
        path = await asyncio.to_thread(path_head, conv.session, user_message_id, 2)
        if not path or path[0].get("role") != "user":
            raise NotFoundError("user message", user_message_id)
        parent = str(path[1]["id"]) if len(path) > 1 else None
        edited_id = new_id("msg")
        editor = author or self.owner
        message = edited_copy(self.settings, path[0], edited_id, new_text, editor)
        return await self._queue.enqueue(
            conv,
            RunKind.EDIT,
            user_message_id=edited_id,
            new_message=NewMessage(message, parent_id=parent, root=parent is None),
            requested_by=editor,
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
        if active is not None and self._may_cancel(active, run_id):
            active.cancel_requested = True
            if active.task is not None:
                active.task.cancel()
            cancelled = True
        if run_id is not None and (active is None or active.run.id != run_id):
            run = await asyncio.to_thread(conv.store.load_run, run_id)
            if run.status == RunStatus.QUEUED:
                cancelled = await self._queue.cancel_queued(conv, run)
        elif include_queued:
            for run in await asyncio.to_thread(conv.store.open_runs, chat_id):
                if run.status == RunStatus.QUEUED:
                    cancelled = await self._queue.cancel_queued(conv, run) or cancelled
        return cancelled

    @staticmethod
    def _may_cancel(active: ActiveRun, run_id: str | None) -> bool:
        """Whether a cancel names the active run, and it is not ending already."""
        targeted = run_id is None or active.run.id == run_id
        return targeted and not active.committing and not active.cancel_requested

    async def subscribe(self, chat_id: str, after_seq: int = 0) -> AsyncIterator[PublishedRunEvent]:
        """Every run event of ``chat_id`` after ``after_seq``: buffered ones, then live ones.

        Runs until the runtime closes (or the consumer stops iterating). Watching a chat
        does not create its file. If the file exists, watching first looks at the chat's
        runs (see :mod:`backend.runtime.recovery`): a reply a stopped process was writing
        would otherwise show as streaming forever to everyone watching, and a reply another
        live process is writing is followed, so its end reaches this watcher.

        When the tab stops watching, close the iterator (``aclose()``, or leave the
        ``async for``): the last watcher of an idle chat releases its event log (see
        :mod:`backend.runtime.working_chats`), so memory does not grow with every chat opened.
        """
        if self._closed:
            raise ChatsError("the runtime is closed")
        await asyncio.to_thread(self.chats.get_chat, chat_id)  # KeyError if not live
        event_log = self._working.watch(chat_id)
        try:
            await self._recover_watched(chat_id)
            async for event in event_log.subscribe(after_seq):
                yield event
        finally:
            self._working.unwatch(chat_id)

    async def run_status(self, chat_id: str) -> RunStatusView:
        conv = await self._open_written(chat_id)
        if conv is None:
            return RunStatusView(running=None, queued=(), last_seq=0)
        runs = await asyncio.to_thread(conv.store.open_runs, chat_id)
        running = next((r for r in runs if r.status == RunStatus.RUNNING), None)
        queued = tuple(r for r in runs if r.status == RunStatus.QUEUED)
        return RunStatusView(running=running, queued=queued, last_seq=conv.events.last_seq)

    async def get_run(self, chat_id: str, run_id: str) -> RunRecord:
        conv = await self._open(chat_id)
        return await asyncio.to_thread(conv.store.load_run, run_id)

    def footprint(self) -> Footprint:
        """Open chats, busy ones, event logs and watchers held now (bounded: working_chats)."""
        return self._working.footprint()

    def release_unused_chats(self, idle_s: float) -> int:
        """Let go of idle chats nobody watches or opened for ``idle_s``; how many."""
        return self._working.release_unused(idle_s)

    async def wait_idle(self, chat_id: str) -> None:
        """Return once ``chat_id`` has no queued or running run (tests, the bench, shutdown)."""
        conv = await self._open(chat_id)
        while True:
            pending = {t for t in (conv.worker, *conv.background) if t and not t.done()}
            if not pending:
                return
            await asyncio.wait(pending)

    # ── the conversation record and session state ───────────────────

    async def get_conversation(self, chat_id: str) -> Conversation:
        """The conversation record (stored with the default binding by the chat's first write;
        a chat never written reads as that default)."""
        conv = await self._open_written(chat_id)
        return await asyncio.to_thread(self._bindings.conversation, chat_id, conv)

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
        return await asyncio.to_thread(self._bindings.bind, conv, agent, policy)

    async def use_latest_agent(self, chat_id: str) -> Conversation:
        """The one click of "Agent updated to v4 — use it": pin the newest version."""
        record = await self.get_conversation(chat_id)
        return await self.bind_agent(chat_id, record.agent_id, policy="pinned")

    async def agent_binding(self, chat_id: str) -> AgentBinding:
        """The chat header's agent and model: bound version, newest version, next model."""
        record = await self.get_conversation(chat_id)
        return await asyncio.to_thread(self._bindings.binding_of, record)

    async def set_model(self, chat_id: str, model: ModelRef | None) -> Conversation:
        """The chat's model from its next turn on (``None``: its agent's, else the default).

        Checked first (``UnknownModelError``); a reply already streaming keeps its model.
        """
        conv = await self._open(chat_id)
        return await asyncio.to_thread(self._bindings.set_model, conv, model)

    async def set_archived(self, chat_id: str, archived: bool = True) -> Conversation:
        """Archive the chat (or not) through its directory; it keeps running if messaged."""
        change = self.chats.archive_chat if archived else self.chats.unarchive_chat
        await asyncio.to_thread(change, chat_id)
        return await self.get_conversation(chat_id)

    async def chat_header(self, chat_id: str) -> ChatHeader:
        """The header's record, agent binding and meter in one thread hop (they were three
        calls, each opening the chat and hopping threads on its own)."""
        conv = await self._open_written(chat_id)
        return await asyncio.to_thread(self._header_of, chat_id, conv)

    def _header_of(self, chat_id: str, conv: WorkingChat | None) -> ChatHeader:
        record = self._bindings.conversation(chat_id, conv)
        meter = measure_next_turn(
            chat_id, conv, self._bindings, self.chats, self.tools, None, self.projects
        )
        return ChatHeader(record, self._bindings.binding_of(record), meter)

    async def context_meter(self, chat_id: str, leaf_id: str | None = None) -> ContextMeter:
        """The composer's meter: the next turn's prompt, the window, whether it compacts."""
        conv = await self._open_written(chat_id)
        return await asyncio.to_thread(
            measure_next_turn,
            chat_id,
            conv,
            self._bindings,
            self.chats,
            self.tools,
            leaf_id,
            self.projects,
        )

    async def uses_owner_context(self, chat_id: str) -> bool:
        """Whether the chat's next run may read the owner's memory and other chats (now)."""
        return await asyncio.to_thread(self._bindings.may_use_owner_context, chat_id)

    async def get_thread_summary(self, chat_id: str) -> ThreadSummary | None:
        """The thread's newest compacted summary (the session's compaction records)."""
        conv = await self._open_written(chat_id)
        return None if conv is None else await asyncio.to_thread(thread_summary, conv.session)

    async def get_session_state(self, chat_id: str) -> SessionState:
        conv = await self._open_written(chat_id)
        if conv is None:
            return SessionState(version=0, data={})  # what the first write starts from

        def load() -> SessionState:
            self._bindings.ensure_record(conv)
            return conv.states.get(chat_id)

        return await asyncio.to_thread(load)

    async def put_session_state(
        self, chat_id: str, state: dict[str, Any], *, expected_version: int
    ) -> SessionState:
        """A trusted, deterministic write (UI or host code): validated, version-checked."""
        conv = await self._open(chat_id)

        def put() -> SessionState:
            agent = self._bindings.agent_for(self._bindings.ensure_record(conv))
            return conv.states.put(
                chat_id, expected_version=expected_version, state=state, schema=agent.state_schema
            )

        return await asyncio.to_thread(put)

    async def shutdown(self, *, grace_s: float = DEFAULT_SHUTDOWN_GRACE_S) -> None:
        """Stop serving, on SIGTERM (:mod:`backend.runtime.shutdown`): every streaming reply is
        saved so far, marked interrupted and its ``run.failed`` published; queued runs stay
        queued for the next start; subscriptions end, model and lock clients close. Idempotent."""
        if self._begin_closing():
            await stop_chats(self._working.values, grace_s=grace_s)
            await self._close(self.models, self.model, self.locks)  # every lease released above

    async def release(self) -> None:
        """Let go of an idle runtime (its host closes the directory): unlike :meth:`shutdown`
        nothing is interrupted (the host checks ``busy_chats`` is 0) and the model sources,
        shared between runtimes, stay open. Idempotent."""
        if self._begin_closing():
            await self._close(self.locks)

    async def aclose(self) -> None:
        """:meth:`shutdown` with the default grace."""
        await self.shutdown()

    def _begin_closing(self) -> bool:
        """Stop taking runs; False when already closed (closing is idempotent)."""
        if self._closed:
            return False
        self._closed = True
        self._queue.closed = True
        return True

    async def _close(self, *resources: object) -> None:
        """Close what has an ``aclose`` (failures ignored), then end every subscription."""
        for resource in resources:
            closer = getattr(resource, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()
        for event_log in self._working.event_logs():
            event_log.close()

    # ── opening a chat ──────────────────────────────────────────────

    async def _open(self, chat_id: str, *, recheck: bool = False) -> WorkingChat:
        """The open chat of a live chat id; opening it looks at its runs (``_recover``).

        ``recheck`` looks again when it is open already: another process may have stopped
        since (a watcher asks for this; a run this runtime claims is never affected).
        """
        if self._closed:
            raise ChatsError("the runtime is closed")
        chat = await asyncio.to_thread(self.chats.get_chat, chat_id)  # KeyError if not live
        conv = self._working.current(chat_id, chat)
        if conv is not None:
            if recheck:
                await self._recover(conv)
            return conv
        conv, built = await self._working.open(chat_id, chat)
        if built:
            await self._recover(conv)
        return conv

    async def _open_written(self, chat_id: str, *, recheck: bool = False) -> WorkingChat | None:
        """:meth:`_open` for a reader: ``None`` for a chat never written, which has no file
        and reads as its defaults (looking at a chat must not create it: SPEC, first write)."""
        chat = await asyncio.to_thread(self.chats.get_chat, chat_id)  # KeyError if not live
        if chat_id not in self._working and not await asyncio.to_thread(lambda: chat.has_file):
            return None
        return await self._open(chat_id, recheck=recheck)

    async def _recover(self, conv: WorkingChat) -> None:
        """Fail orphaned runs, and let the worker take (or follow) the runs still open."""
        await self._recovery.recover(conv)
        if conv.followed:
            self._queue.wake(conv)

    async def _recover_watched(self, chat_id: str) -> None:
        """Before a watcher replays events: recover the chat's runs, if it has a file at all
        (a chat never written has no runs, and watching must not create its file)."""
        try:
            await self._open_written(chat_id, recheck=True)
        except ChatNotFoundError:
            pass  # deleted meanwhile: the subscription simply sees nothing
        except Exception:  # watching still works; the next open retries the recovery
            logger.warning("could not recover the runs of chat %s", chat_id, exc_info=True)
