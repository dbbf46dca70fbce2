"""How full the next turn's prompt is: the composer's context meter.

:func:`context_meter` is pure: given the bound agent, the request the next turn would send
and the thread's token estimate, it says how many tokens that is, against which context
window, and whether the turn compacts the thread first (the rule of
:func:`backend.runtime.window.needs_compaction`, the one the run applies).

:func:`measure_next_turn` gathers that material for a chat the way a run does
(``window.scan_recent``, ``prompt.build_request``): the recent window, the thread summary,
session state, shared memory and the agent's tools (as a run would: without the owner's
memory and the tools that reach it, in a shared chat whose owner did not switch them on), and in
a project chat the project's instructions and memory (and shared memory only if the project uses
it). Two things are left out because they do not exist before the user types: the new message
itself and what retrieval would find for it.
So the meter is what the next turn sends *before* its message, an honest lower bound; in a
project chat it also says how many tokens the project's file chunks may add
(``project_files_tokens``, the budget retrieval stays within).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from backend.models import ModelRequest
from backend.providers import RemoteContextProvider
from backend.runtime.agents import AgentDefinition
from backend.runtime.bindings import Bindings
from backend.runtime.ports import DirectoryPort
from backend.runtime.project_context import (
    FILES_BUDGET_TOKENS,
    ProjectSource,
    project_sections,
    read_project,
)
from backend.runtime.prompt import build_request, history_byte_budget, request_tokens
from backend.runtime.records import AgentBinding, Conversation
from backend.runtime.tools import Tool, offered_tools
from backend.runtime.window import Scan, needs_compaction, scan_recent
from backend.runtime.working_chats import WorkingChat


@dataclass(frozen=True, slots=True)
class ContextMeter:
    """The next turn's prompt against the bound agent's context window."""

    next_turn_tokens: int  # estimated tokens the next turn sends (before the new message)
    context_tokens: int  # the context window the bound agent is configured for
    compact_after_tokens: int | None  # the thread size that triggers compaction (None: never)
    will_compact: bool  # the next turn summarises the thread before it calls the model
    project_files_tokens: int = 0  # at most this many more from the project's files (0: none)

    @property
    def share(self) -> float:
        """``next_turn_tokens`` as a share of the window, 0..1 (a prompt over it reads 1)."""
        if self.context_tokens <= 0:
            return 1.0
        return min(1.0, self.next_turn_tokens / self.context_tokens)

    @property
    def compact_at_share(self) -> float | None:
        """Where compaction sets in on the same scale (0..1), None when it never does."""
        if self.compact_after_tokens is None or self.context_tokens <= 0:
            return None
        return min(1.0, self.compact_after_tokens / self.context_tokens)


def context_meter(
    agent: AgentDefinition, request: ModelRequest, thread_tokens: int
) -> ContextMeter:
    """The meter for a turn that would send ``request`` from a thread of ``thread_tokens``."""
    threshold = agent.model.compact_after_tokens
    return ContextMeter(
        next_turn_tokens=request_tokens(request),
        context_tokens=agent.model.context_tokens,
        compact_after_tokens=threshold,
        will_compact=needs_compaction(thread_tokens, threshold),
    )


def measure_next_turn(
    chat_id: str,
    conv: WorkingChat | None,
    bindings: Bindings,
    directory: DirectoryPort,
    tools: Mapping[str, Tool],
    leaf_id: str | None = None,
    projects: ProjectSource | None = None,
) -> ContextMeter:
    """The meter of the chat's next turn, continuing ``leaf_id`` (default: the newest leaf);
    ``conv`` is None for a chat never written (no file: its defaults, no history).

    Synchronous (SQLite reads): call it from a worker thread.
    """
    record = bindings.conversation(chat_id, conv)
    agent = bindings.agent_for(record)
    scan = Scan([], 0)
    if conv is not None and leaf_id is None:
        leaf = conv.session.get_latest_leaf()
        leaf_id = str(leaf["id"]) if leaf else None
    if conv is not None and leaf_id is not None:
        threshold = agent.model.compact_after_tokens
        budget = history_byte_budget(agent)
        scan = scan_recent(conv.session, leaf_id, budget, threshold, conv.boundaries)
    owner_context = bindings.may_use_owner_context(chat_id)
    project = read_project(projects, chat_id, "") if owner_context else None
    personal = owner_context and (project is None or project.use_personal_memory)
    labels = [block.label for block in agent.context_blocks]
    request = build_request(
        agent=agent,
        history=scan.window,
        tools=[tool.spec for tool in offered_tools(tools, agent.tools, owner_context).values()],
        memory={label: _memory(directory, label) if personal else None for label in labels},
        state=conv.states.get(chat_id).data if conv is not None else {},
        summary=scan.summary,
        chat_id=chat_id,
        project=project_sections(project),
    )
    meter = context_meter(agent, request, scan.tokens)
    if project is None:
        return meter
    return replace(meter, project_files_tokens=FILES_BUDGET_TOKENS)


def _memory(directory: DirectoryPort, label: str) -> str | None:
    provider = RemoteContextProvider(directory)
    provider.init(label)
    return provider.get()  # fail-soft: unreachable memory reads as None, as in a run


@dataclass(frozen=True, slots=True)
class ChatHeader:
    """Everything a chat's header and context meter show, read together in one thread hop
    (:meth:`backend.runtime.ChatRuntime.chat_header`)."""

    conversation: Conversation
    binding: AgentBinding
    meter: ContextMeter
