"""Starting a chat bound to an agent the user picked ("New chat with ▾"), in one call.

A new chat is otherwise bound to the default agent on first use (``bindings``); this binds the
chosen one before anyone sees the chat, so its first reply is already the agent's. Written
over :class:`~backend.runtime.runtime.ChatRuntime`'s public API only.
"""

from __future__ import annotations

import asyncio
import contextlib

from backend.errors import AgentNotFoundError
from backend.runtime.records import Conversation
from backend.runtime.runtime import ChatRuntime


async def start_chat(
    runtime: ChatRuntime, agent_id: str | None = None, *, title: str | None = None
) -> Conversation:
    """A new chat bound to ``agent_id``, pinned to its newest version (``None``: the default).

    An unknown agent makes no chat (``AgentNotFoundError``); a chat whose binding cannot be
    written is deleted again, so no half-made chat stays in the list.
    """
    if agent_id is not None:
        if not isinstance(agent_id, str):  # a client's pick can be any JSON value
            raise AgentNotFoundError(str(agent_id)[:80])
        runtime.agents.get(agent_id)
    summary = await asyncio.to_thread(runtime.chats.create_chat, title)
    try:
        if agent_id is not None:
            await runtime.bind_agent(summary.id, agent_id)
        return await runtime.get_conversation(summary.id)
    except BaseException:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(runtime.chats.delete_chat, summary.id)
        raise
