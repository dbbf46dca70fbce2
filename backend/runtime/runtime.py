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
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from backend.clock import now_ms
from backend.config import Settings
from backend.errors import (
    InvalidInputError,
    NotFoundError,
)
from backend.messages import Author
from backend.models import ModelProvider, provider_from_settings
from backend.runtime.agents import AgentRegistry, AgentSource
from backend.runtime.bindings import Bindings
from backend.runtime.chat_opener import ChatOpener
from backend.runtime.conversation_settings import ConversationSettings
from backend.runtime.events import PublishedRunEvent
from backend.runtime.execute import DEFAULT_CHECKPOINT_INTERVAL_S, TurnExecutor
from backend.runtime.locks import DistributedLockStore, InProcessLockStore, process_owner
from backend.runtime.model_choice import ModelSource, SingleModel
from backend.runtime.ports import DirectoryPort
from backend.runtime.project_context import ProjectSource
from backend.runtime.records import (
    RunKind,
    RunRecord,
    RunStatus,
    RunStatusView,
    RunTicket,
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
from backend.runtime.working_chats import ActiveRun, Footprint, WorkingChats


class ChatRuntime(ConversationSettings):
    """Runs conversations of one directory. Create one per directory and share it.

    ``chats`` is the directory (a :class:`backend.chats.Chats`, or anything that implements
    :class:`~backend.runtime.ports.DirectoryPort`). ``models`` says which models chats may
    use (``backend.endpoints.ModelEndpoints``); without it every chat is answered by
    ``model``, which defaults to :func:`backend.models.provider_from_settings`. ``agents`` is
    an :class:`AgentSource`: a registry, or the user's library (``LibraryAgents``).

    Shared chats (``docs/sharing.md``): ``owner_name`` is what the owner's messages show;
    ``participants`` and ``owner_context`` come from ``Sharing.run_hooks`` (without them every
    chat has the owner alone, and every run may read the owner's memory and other chats).

    Messages, runs and closing are this class's; the calls on a chat's record, agent, model,
    meter and state are inherited (:mod:`backend.runtime.conversation_settings`), and every
    call opens its chat through :class:`~backend.runtime.chat_opener.ChatOpener`.
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
        recovery = Recovery(self.locks, writer)
        owner = new_id("runtime")
        self._queue = RunQueue(
            bindings=self._bindings,
            executor=executor,
            recovery=recovery,
            writer=writer,
            locks=self.locks,
            owner=owner,
            claimant=process_owner(owner),
            lease_ttl_s=lease_ttl_s,
            clock=clock_ms,
        )
        self._working = WorkingChats(max_state_bytes=max_state_bytes, clock=clock_ms)
        self._opener = ChatOpener(chats, self._working, recovery, self._queue)

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
        conv = await self._opener.open(chat_id)
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
        conv = await self._opener.open(chat_id)
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
        conv = await self._opener.open(chat_id)
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
        conv = await self._opener.open(chat_id)
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
        self._opener.check_open()
        await asyncio.to_thread(self.chats.get_chat, chat_id)  # KeyError if not live
        event_log = self._working.watch(chat_id)
        try:
            await self._opener.recover_watched(chat_id)
            async for event in event_log.subscribe(after_seq):
                yield event
        finally:
            self._working.unwatch(chat_id)

    async def run_status(self, chat_id: str) -> RunStatusView:
        conv = await self._opener.open_written(chat_id)
        if conv is None:
            return RunStatusView(running=None, queued=(), last_seq=0)
        runs = await asyncio.to_thread(conv.store.open_runs, chat_id)
        running = next((r for r in runs if r.status == RunStatus.RUNNING), None)
        queued = tuple(r for r in runs if r.status == RunStatus.QUEUED)
        return RunStatusView(running=running, queued=queued, last_seq=conv.events.last_seq)

    async def get_run(self, chat_id: str, run_id: str) -> RunRecord:
        conv = await self._opener.open(chat_id)
        return await asyncio.to_thread(conv.store.load_run, run_id)

    def footprint(self) -> Footprint:
        """Open chats, busy ones, event logs and watchers held now (bounded: working_chats)."""
        return self._working.footprint()

    def release_unused_chats(self, idle_s: float) -> int:
        """Let go of idle chats nobody watches or opened for ``idle_s``; how many."""
        return self._working.release_unused(idle_s)

    async def wait_idle(self, chat_id: str) -> None:
        """Return once ``chat_id`` has no queued or running run (tests, the bench, shutdown)."""
        conv = await self._opener.open(chat_id)
        while True:
            pending = {t for t in (conv.worker, *conv.background) if t and not t.done()}
            if not pending:
                return
            await asyncio.wait(pending)

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
        if self._opener.closed:
            return False
        self._opener.closed = True
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
