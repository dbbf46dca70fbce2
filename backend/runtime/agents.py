"""Agent definitions (what answers in a conversation) and the registry that versions them.

An agent is immutable once registered: a new system prompt or tool set is a new *version*.
That is what makes a pinned conversation deterministic — resuming it weeks later runs the
exact definition that produced its earlier turns (seed 004).

Invariants: versions of one agent id start at 1 and only grow; ``get(id)`` is the newest,
``get(id, version)`` exactly that one or :class:`AgentNotFoundError`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from backend.chats import MEMORY_LABEL
from backend.errors import AgentNotFoundError
from backend.models import REMEMBER_TOOL, UPDATE_STATE_TOOL, ModelRef

DEFAULT_AGENT_ID = "assistant"
DEFAULT_CONTEXT_TOKENS = 8_000


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Per-agent model parameters. ``model`` overrides the configured model name."""

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    context_tokens: int = DEFAULT_CONTEXT_TOKENS
    # Compact the thread once its estimate passes this many tokens (None: never).
    compact_after_tokens: int | None = None
    # Tokens of recent history compaction keeps verbatim.
    keep_recent_tokens: int = 2_000


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """A block of shared context the prompt carries, read from the directory each turn."""

    label: str
    title: str
    description: str = ""
    max_tokens: int = 2_000


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    id: str
    version: int
    system_prompt: str
    model: ModelSettings = field(default_factory=ModelSettings)
    tools: tuple[str, ...] = ()
    context_blocks: tuple[ContextBlock, ...] = ()
    # JSON-schema subset the session state must satisfy (see backend.runtime.state_schema).
    state_schema: dict[str, Any] | None = None
    # The model this agent answers with unless the chat chose one (None: the default).
    model_ref: ModelRef | None = None


DEFAULT_STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": ["string", "number", "integer", "boolean", "null", "array", "object"]
    },
}

DEFAULT_AGENT = AgentDefinition(
    id=DEFAULT_AGENT_ID,
    version=1,
    system_prompt=(
        "You are a helpful assistant in a multi-chat app. Be accurate and concise. "
        "Use the shared memory below when it is relevant. When the user asks you to remember "
        f"something, call the `{REMEMBER_TOOL}` tool. Keep task progress that must survive "
        f"between turns in the session state with `{UPDATE_STATE_TOOL}`."
    ),
    model=ModelSettings(compact_after_tokens=6_000),
    tools=(REMEMBER_TOOL, UPDATE_STATE_TOOL),
    context_blocks=(
        ContextBlock(MEMORY_LABEL, "Shared memory (facts about the user, from every chat)"),
    ),
    state_schema=DEFAULT_STATE_SCHEMA,
)


class AgentRegistry:
    """Thread-safe, in-memory registry of agent versions (seeded with the default agent)."""

    def __init__(self, *agents: AgentDefinition, include_default: bool = True) -> None:
        self._lock = threading.Lock()
        self._versions: dict[str, dict[int, AgentDefinition]] = {}
        if include_default:
            self._put(DEFAULT_AGENT)
        for agent in agents:
            self._put(agent)

    def _put(self, agent: AgentDefinition) -> None:
        versions = self._versions.setdefault(agent.id, {})
        if agent.version in versions and versions[agent.version] != agent:
            raise ValueError(f"agent {agent.id!r} version {agent.version} is already registered")
        if versions and agent.version <= max(versions) and agent.version not in versions:
            raise ValueError(
                f"agent {agent.id!r} versions only grow: {agent.version} <= {max(versions)}"
            )
        versions[agent.version] = agent

    def register(self, agent: AgentDefinition) -> AgentDefinition:
        with self._lock:
            self._put(agent)
        return agent

    def publish(self, agent_id: str, **changes: Any) -> AgentDefinition:
        """Register the next version of ``agent_id`` with ``changes`` applied to the newest."""
        with self._lock:
            current = self._latest(agent_id)
            agent = replace(current, version=current.version + 1, **changes)
            self._put(agent)
            return agent

    def get(self, agent_id: str, version: int | None = None) -> AgentDefinition:
        with self._lock:
            if version is None:
                return self._latest(agent_id)
            agent = self._versions.get(agent_id, {}).get(version)
            if agent is None:
                raise AgentNotFoundError(agent_id, version)
            return agent

    def _latest(self, agent_id: str) -> AgentDefinition:
        versions = self._versions.get(agent_id)
        if not versions:
            raise AgentNotFoundError(agent_id)
        return versions[max(versions)]

    def ids(self) -> list[str]:
        with self._lock:
            return sorted(self._versions)

    def default_id(self) -> str:
        """The agent a new chat is bound to."""
        return DEFAULT_AGENT_ID

    def __contains__(self, agent_id: object) -> bool:
        with self._lock:
            return agent_id in self._versions


class AgentSource(Protocol):
    """Where the runtime reads agent versions: this registry, or a user's library
    (:class:`backend.runtime.library_agents.LibraryAgents`)."""

    def get(self, agent_id: str, version: int | None = None) -> AgentDefinition:
        """That version (the newest when ``None``), or :class:`AgentNotFoundError`."""
        ...

    def default_id(self) -> str: ...
