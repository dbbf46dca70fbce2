"""Executing one claimed run: gather the turn's material, stream, run tools, commit.

A run streams up to ``MAX_TOOL_ROUNDS`` rounds of tool calls (the last round offers no
tools, so the model must answer). Deltas are published as they arrive and the reply is
checkpointed every ``checkpoint_interval_s``, so a crash loses at most that much of it.

Frozen context: shared memory is read once per turn (fail-soft: unreachable memory means an
empty block this turn), so a ``remember`` in another chat shows up at the next turn.

The owner's context: a run reads the owner's shared memory, quotes their other chats
(retrieval) and offers the tools that reach them (``remember``, ``search_chats``) only when
``owner_context(chat_id)`` says it may (``Bindings.may_use_owner_context``: a shared chat
only if its owner switched it on). Otherwise the run has the chat, its bound agent and its
session state, nothing else, whoever sent the message.

Ends: success commits (see :mod:`backend.runtime.turn`) and publishes ``run.completed``; a
cancel or a failure keeps the partial reply and publishes ``run.cancelled`` / ``run.failed``
with a sentence from :mod:`backend.runtime.failures`. A shutdown (``ActiveRun.interrupted``)
keeps it as ``failed`` with ``INTERRUPTED_ERROR``, exactly as a recovered run reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace

from backend.clock import now_ms
from backend.errors import ChatsError
from backend.models import (
    ContextItem,
    ContextSection,
    Finish,
    ModelMessage,
    ModelProvider,
    ModelRequest,
    TextDelta,
    ToolCall,
)
from backend.providers import RemoteContextProvider
from backend.runtime.agents import MEMORY_LABEL, AgentDefinition
from backend.runtime.failures import INTERRUPTED_ERROR, describe_failure
from backend.runtime.model_choice import ModelSource
from backend.runtime.ports import DirectoryPort
from backend.runtime.project_context import (
    ProjectSource,
    ProjectTurnView,
    project_sections,
    read_project,
)
from backend.runtime.prompt import build_request, request_tokens, text_of, to_json
from backend.runtime.records import RunRecord, RunStatus
from backend.runtime.retrieval import Retriever
from backend.runtime.run_events import (
    MessageDelta,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunStarted,
    ToolCalled,
    written_now,
)
from backend.runtime.state import SessionStateHandle
from backend.runtime.temporary_chats import WRITING_TOOLS, is_temporary
from backend.runtime.titles import TurnFollowUp
from backend.runtime.tools import (
    Tool,
    ToolContext,
    ToolError,
    offered_tools,
    run_tool,
    stored_input,
    tool_part,
)
from backend.runtime.turn import Turn, TurnWriter
from backend.runtime.window import HistoryWindow, Scan
from backend.runtime.working_chats import ActiveRun, WorkingChat
from backend.sessions import tool_part_type
from backend.storage import well_formed_text

logger = logging.getLogger(__name__)

MAX_TOOL_ROUNDS = 4
# A streaming reply is saved this often, so a crash loses at most this much of it.
DEFAULT_CHECKPOINT_INTERVAL_S = 2.0


@dataclass
class _Material:
    """What a turn is built from, read once at its start."""

    scan: Scan
    user_text: str
    memory: dict[str, str | None]
    retrieved: list[ContextItem]
    tools: dict[str, Tool]
    context: ToolContext
    model: ModelProvider  # the run's (see backend.runtime.model_choice)
    project: tuple[ContextSection, ...] = ()  # the chat's project's (project_context)


@dataclass(kw_only=True)
class TurnExecutor:
    """Runs one claimed run to its end (always published, always recorded)."""

    directory: DirectoryPort
    models: ModelSource
    tools: Mapping[str, Tool]
    writer: TurnWriter
    window: HistoryWindow
    retriever: Retriever
    follow_up: TurnFollowUp
    checkpoint_interval_s: float
    owner_context: Callable[[str], bool] = lambda _chat_id: True
    projects: ProjectSource | None = None

    async def execute(
        self,
        conv: WorkingChat,
        active: ActiveRun,
        agent: AgentDefinition,
        handle: SessionStateHandle,
    ) -> None:
        run = active.run
        turn = Turn()
        conv.publish(
            run.id,
            RunStarted(
                user_message_id=run.user_message_id,
                assistant_message_id=run.assistant_message_id,
                agent_id=agent.id,
                agent_version=agent.version,
                model=run.model_name or "",
                endpoint=run.model_endpoint or "",
            ),
        )
        try:
            material = await self._gather(conv, run, agent, handle)
            await self._rounds(conv, run, agent, handle, material, turn)
            active.committing = True
            stored = await asyncio.to_thread(self.writer.commit, conv, run, turn, handle)
        except asyncio.CancelledError:
            if not active.cancel_requested:
                raise
            active.committing = True
            if active.interrupted:
                await self._fail(conv, run, turn, RunStatus.FAILED, None, INTERRUPTED_ERROR)
            else:
                await self._fail(conv, run, turn, RunStatus.CANCELLED, None)
            return
        except Exception as exc:
            active.committing = True
            if not isinstance(exc, ChatsError):
                logger.exception("run %s of chat %s failed", run.id, conv.chat_id)
            await self._fail(conv, run, turn, RunStatus.FAILED, exc)
            return
        reply = turn.reply_text()
        conv.publish(
            run.id,
            # Events leave the process as UTF-8: a lone surrogate would break the front end.
            RunCompleted(
                assistant_message_id=run.assistant_message_id,
                text=well_formed_text(reply),
                written=written_now(stored, run.user_message_id, now_ms()),
            ),
        )
        task = asyncio.ensure_future(
            self.follow_up.after_completed(conv, reply, material.user_text, material.model)
        )
        conv.background.add(task)
        task.add_done_callback(conv.background.discard)

    async def _gather(
        self, conv: WorkingChat, run: RunRecord, agent: AgentDefinition, handle: SessionStateHandle
    ) -> _Material:
        model = self.models.provider_for(run.model or self.models.default_ref())
        scan = await self.window.read(conv, run, agent, model)
        user_text = text_of(scan.window[-1]) if scan.window else ""
        if not await asyncio.to_thread(self.owner_context, conv.chat_id):
            # the chat, its agent and its session state only (see the module docstring): no
            # memory, other chats or project of the owner's
            nothing: dict[str, str | None] = {block.label: None for block in agent.context_blocks}
            tools = offered_tools(self.tools, agent.tools, owner_context=False)
            context = ToolContext(conv.chat_id, handle, _no_owner_memory)
            return _Material(scan, user_text, nothing, [], tools, context, model)
        project = await asyncio.to_thread(read_project, self.projects, conv.chat_id, user_text)
        personal = project is None or project.use_personal_memory
        memory = await self._frozen_memory(agent) if personal else {}
        within = None if project is None else project.chat_ids
        retrieved = await self.retriever.retrieve(conv.chat_id, run, user_text, model, within)
        tools = offered_tools(self.tools, agent.tools, owner_context=True)
        if not WRITING_TOOLS.isdisjoint(tools):
            temporary = await asyncio.to_thread(is_temporary, self.directory, conv.chat_id)
            if temporary:  # nothing of it may outlive it (backend.runtime.temporary_chats)
                tools = {name: tool for name, tool in tools.items() if name not in WRITING_TOOLS}
        remember = self._remember_fn(agent, conv.chat_id, project)
        context = ToolContext(conv.chat_id, handle, remember, self._search_fn(run, within))
        sections = project_sections(project)
        return _Material(scan, user_text, memory, retrieved, tools, context, model, sections)

    async def _rounds(
        self,
        conv: WorkingChat,
        run: RunRecord,
        agent: AgentDefinition,
        handle: SessionStateHandle,
        material: _Material,
        turn: Turn,
    ) -> None:
        """Stream, run the tools the model called, and stream again with their results."""
        extra: list[ModelMessage] = []
        for round_no in range(MAX_TOOL_ROUNDS + 1):
            offered = material.tools.values() if round_no < MAX_TOOL_ROUNDS else ()
            request = build_request(
                agent=agent,
                history=material.scan.window,
                tools=[tool.spec for tool in offered],
                memory=material.memory,
                retrieved=material.retrieved,
                state=handle.data,
                summary=material.scan.summary,
                chat_id=conv.chat_id,
                run_id=run.id,
                project=material.project,
            )
            if extra:
                request = replace(request, messages=(*request.messages, *extra))
            calls = await self._stream_once(conv, run, material.model, request, turn)
            if not calls:
                return
            turn.flush_text()
            results = [await self._call_tool(conv, run, material, call, turn) for call in calls]
            extra += [ModelMessage("assistant", "", tool_calls=tuple(calls)), *results]

    async def _call_tool(
        self, conv: WorkingChat, run: RunRecord, material: _Material, call: ToolCall, turn: Turn
    ) -> ModelMessage:
        conv.publish(
            run.id,
            ToolCalled(
                assistant_message_id=run.assistant_message_id,
                part={
                    "type": tool_part_type(call.name),
                    "toolCallId": call.id,
                    "state": "input-available",
                    "input": stored_input(call),
                },
            ),
        )
        output, error = await run_tool(material.tools, material.context, call)
        part = tool_part(call, output, error)
        turn.parts.append(part)
        conv.publish(run.id, ToolCalled(assistant_message_id=run.assistant_message_id, part=part))
        result = {"error": error} if error else output
        return ModelMessage("tool", to_json(result), tool_call_id=call.id)

    async def _stream_once(
        self,
        conv: WorkingChat,
        run: RunRecord,
        model: ModelProvider,
        request: ModelRequest,
        turn: Turn,
    ) -> list[ToolCall]:
        calls: list[ToolCall] = []
        turn.begin_call(request_tokens(request))
        # aclosing: leaving early (Finish, cancel, error) closes the HTTP response at once
        # instead of whenever the abandoned generator is collected.
        async with contextlib.aclosing(model.stream(request)) as events:
            async for event in events:
                if isinstance(event, Finish):
                    turn.end_call(event.usage, calls)
                    break
                if isinstance(event, ToolCall):
                    calls.append(event)
                elif isinstance(event, TextDelta) and event.text:
                    shown = turn.add_text(event.text)
                    if shown:
                        conv.publish(
                            run.id, MessageDelta(message_id=run.assistant_message_id, text=shown)
                        )
                    if time.monotonic() - turn.checkpointed_at >= self.checkpoint_interval_s:
                        turn.checkpointed_at = time.monotonic()
                        await asyncio.to_thread(self.writer.checkpoint, conv, run, turn)
        return calls

    async def _fail(
        self,
        conv: WorkingChat,
        run: RunRecord,
        turn: Turn,
        status: RunStatus,
        exc: BaseException | None,
        error: str | None = None,
    ) -> None:
        """End the run unsuccessfully; ``error`` is the sentence when there is no ``exc``."""
        if exc is not None:
            error = well_formed_text(describe_failure(exc))
        try:
            await asyncio.shield(
                asyncio.to_thread(self.writer.finish_unsuccessful, conv, run, turn, status, error)
            )
        except Exception:
            logger.exception("could not record the end of run %s", run.id)
        message_id, partial = run.assistant_message_id, bool(turn.all_parts())
        if status == RunStatus.FAILED:
            error_type = type(exc).__name__ if exc is not None else ""
            failed = RunFailed(
                assistant_message_id=message_id,
                error=error or "",
                error_type=error_type,
                partial=partial,
            )
            conv.publish(run.id, failed)
        else:
            conv.publish(run.id, RunCancelled(assistant_message_id=message_id, partial=partial))
        with contextlib.suppress(Exception):
            await self.follow_up.record_turn(conv, turn.reply_text())

    async def _frozen_memory(self, agent: AgentDefinition) -> dict[str, str | None]:
        """Each context block read once for the whole turn; unreachable → empty (fail-soft)."""
        memory: dict[str, str | None] = {}
        for block in agent.context_blocks:
            provider = self._context_provider(block.label)
            try:
                memory[block.label] = await asyncio.to_thread(provider.get)
            except Exception:  # get() is fail-soft already; belt and braces for adapters
                memory[block.label] = None
        return memory

    def _remember_fn(
        self, agent: AgentDefinition, chat_id: str, project: ProjectTurnView | None
    ) -> Callable[[str], Awaitable[None]]:
        """Into the project's memory in a project chat, else the agent's first block."""
        label = agent.context_blocks[0].label if agent.context_blocks else MEMORY_LABEL
        provider = self._context_provider(label)
        projects = self.projects if project is not None else None

        async def remember(fact: str) -> None:
            if projects is not None and await asyncio.to_thread(projects.remember, chat_id, fact):
                return
            await asyncio.to_thread(provider.append, f"- {fact}\n")

        return remember

    def _search_fn(
        self, run: RunRecord, within: frozenset[str] | None
    ) -> Callable[[str], Awaitable[list[dict[str, str]]]]:
        async def search(query: str) -> list[dict[str, str]]:
            items = await asyncio.to_thread(self.retriever.search, run, query, within)
            return [{"chat": i.source, "text": i.text, "ref": i.ref} for i in items]

        return search

    def _context_provider(self, label: str) -> RemoteContextProvider:
        """A fail-soft view of one shared-context block of the directory (RFC edge cases 7-10)."""
        provider = RemoteContextProvider(self.directory)
        provider.init(label)
        return provider


async def _no_owner_memory(_fact: str) -> None:
    """``remember`` in a run that may not touch the owner's shared memory (never offered
    there; a call of it anyway is refused, not obeyed)."""
    raise ToolError("shared memory is not available in this chat")
