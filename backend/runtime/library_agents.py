"""The runtime's view of one user's agent library: versions as runnable definitions.

``LibraryAgents(library)`` is an :class:`~backend.runtime.agents.AgentSource`: the runtime of
that user's directory binds and runs the library's agents, and the built-in agents of
``builtin`` (the default assistant) stay reachable by their ids.

A version is immutable, so its definition is cached by ``(agent_id, version)`` (bounded); the
newest version of an agent costs one indexed read of its head per call (a ``latest`` chat
sees a new save at its next claim). A version becomes a definition with:

* ``system_prompt`` = the version's instructions, exactly (the model receives them as the
  system message, followed only by context sections such as shared memory when there is any);
* its temperature and max output tokens, its tools, its model;
* the default assistant's context blocks (shared memory), compaction and state schema.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

from backend.agents import AgentLibrary, AgentVersion
from backend.runtime.agents import DEFAULT_AGENT, AgentDefinition, AgentRegistry

MAX_CACHED_DEFINITIONS = 256


class LibraryAgents:
    """See the module docstring. Thread-safe."""

    def __init__(self, library: AgentLibrary, builtin: AgentRegistry | None = None) -> None:
        self.library = library
        self._builtin = builtin or AgentRegistry()
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, int], AgentDefinition] = OrderedDict()

    def get(self, agent_id: str, version: int | None = None) -> AgentDefinition:
        if agent_id in self._builtin:
            return self._builtin.get(agent_id, version)
        if version is None:
            version = self.library.latest_version(agent_id)
        key = (agent_id, version)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        definition = definition_of(self.library.load(agent_id, version))
        with self._lock:
            self._cache[key] = definition
            while len(self._cache) > MAX_CACHED_DEFINITIONS:
                self._cache.popitem(last=False)
        return definition

    def latest_version(self, agent_id: str) -> int:
        if agent_id in self._builtin:
            return self._builtin.get(agent_id).version
        return self.library.latest_version(agent_id)

    def default_id(self) -> str:
        return self.library.default_agent_id() or self._builtin.default_id()


def definition_of(version: AgentVersion) -> AgentDefinition:
    spec = version.spec
    return AgentDefinition(
        id=version.agent_id,
        version=version.version,
        system_prompt=spec.instructions,
        model=replace(
            DEFAULT_AGENT.model, temperature=spec.temperature, max_tokens=spec.max_output_tokens
        ),
        tools=spec.tools,
        context_blocks=DEFAULT_AGENT.context_blocks,
        state_schema=DEFAULT_AGENT.state_schema,
        model_ref=spec.model,
    )
