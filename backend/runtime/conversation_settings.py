"""The runtime's calls on a chat's settings: its conversation record, agent, model, meter, state.

:class:`ConversationSettings` is the part of :class:`~backend.runtime.runtime.ChatRuntime`
that reads and changes what a chat is bound to and remembers, as opposed to its messages
and runs; ``ChatRuntime`` inherits it and builds the attributes declared here. Each call
reads a chat never written as its defaults without creating its file (SPEC, first write).
"""

from __future__ import annotations

import asyncio
from typing import Any

from backend.models import ModelRef
from backend.runtime.agents import AgentSource
from backend.runtime.bindings import Bindings
from backend.runtime.chat_opener import ChatOpener
from backend.runtime.compaction import thread_summary
from backend.runtime.meter import ChatHeader, ContextMeter, measure_next_turn
from backend.runtime.ports import DirectoryPort
from backend.runtime.project_context import ProjectSource
from backend.runtime.records import (
    AgentBinding,
    Conversation,
    SessionState,
    ThreadSummary,
    VersionPolicy,
)
from backend.runtime.tools import Tool
from backend.runtime.working_chats import WorkingChat


class ConversationSettings:
    """A chat's record, binding, model, context meter and session state (module docstring)."""

    chats: DirectoryPort
    agents: AgentSource
    tools: dict[str, Tool]
    projects: ProjectSource | None
    _bindings: Bindings
    _opener: ChatOpener

    async def get_conversation(self, chat_id: str) -> Conversation:
        """The conversation record (stored with the default binding by the chat's first write;
        a chat never written reads as that default)."""
        conv = await self._opener.open_written(chat_id)
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
        conv = await self._opener.open(chat_id)
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
        conv = await self._opener.open(chat_id)
        return await asyncio.to_thread(self._bindings.set_model, conv, model)

    async def set_archived(self, chat_id: str, archived: bool = True) -> Conversation:
        """Archive the chat (or not) through its directory; it keeps running if messaged."""
        change = self.chats.archive_chat if archived else self.chats.unarchive_chat
        await asyncio.to_thread(change, chat_id)
        return await self.get_conversation(chat_id)

    async def chat_header(self, chat_id: str) -> ChatHeader:
        """The header's record, agent binding and meter in one thread hop (they were three
        calls, each opening the chat and hopping threads on its own)."""
        conv = await self._opener.open_written(chat_id)
        return await asyncio.to_thread(self._header_of, chat_id, conv)

    def _header_of(self, chat_id: str, conv: WorkingChat | None) -> ChatHeader:
        record = self._bindings.conversation(chat_id, conv)
        meter = measure_next_turn(
            chat_id, conv, self._bindings, self.chats, self.tools, None, self.projects
        )
        return ChatHeader(record, self._bindings.binding_of(record), meter)

    async def context_meter(self, chat_id: str, leaf_id: str | None = None) -> ContextMeter:
        """The composer's meter: the next turn's prompt, the window, whether it compacts."""
        conv = await self._opener.open_written(chat_id)
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
        conv = await self._opener.open_written(chat_id)
        return None if conv is None else await asyncio.to_thread(thread_summary, conv.session)

    async def get_session_state(self, chat_id: str) -> SessionState:
        conv = await self._opener.open_written(chat_id)
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
        conv = await self._opener.open(chat_id)

        def put() -> SessionState:
            agent = self._bindings.agent_for(self._bindings.ensure_record(conv))
            return conv.states.put(
                chat_id, expected_version=expected_version, state=state, schema=agent.state_schema
            )

        return await asyncio.to_thread(put)
