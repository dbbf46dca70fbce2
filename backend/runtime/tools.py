"""Tools the model may call, and how their calls and results become message parts.

A tool validates its arguments, does one deterministic thing, and returns a JSON object.
Failures are returned to the model as an error result (it can correct itself) and stored as
an ``output-error`` part; they never abort the turn.

Stored parts use the AI SDK ``UIMessage`` tool-part shape::

    {"type": "tool-<name>", "toolCallId": ..., "state": "output-available",
     "input": {...}, "output": {...}}
    {"type": "tool-<name>", "toolCallId": ..., "state": "output-error",
     "input": {...}, "errorText": "..."}
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from backend.errors import ChatsError
from backend.models import (
    REMEMBER_TOOL,
    SEARCH_CHATS_TOOL,
    UPDATE_STATE_TOOL,
    ToolCall,
    ToolSpec,
)
from backend.runtime.state import SessionStateHandle
from backend.runtime.state_schema import path_deeper_than
from backend.sessions import tool_part_type

MAX_QUERY_CHARS = 200
MAX_FACT_CHARS = 1_000
# A call's input is published and stored with the reply. One nested deeper than this is
# replaced by a note: far past it, encoding the message would hit the interpreter's
# recursion limit and the whole turn could not be saved.
MAX_STORED_INPUT_DEPTH = 64


class ToolError(ChatsError):
    """A tool refused its input; the message goes back to the model."""


@dataclass
class ToolContext:
    """What a tool may touch during one run."""

    chat_id: str
    state: SessionStateHandle
    remember: Callable[[str], Awaitable[None]]
    # The user's past messages matching a query: [{"chat", "text", "ref"}] (search_chats).
    search: Callable[[str], Awaitable[list[dict[str, str]]]] | None = None


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]: ...


class RememberTool:
    """Append one fact to the user's shared memory (visible to every chat)."""

    spec = ToolSpec(
        name=REMEMBER_TOOL,
        description="Save a fact about the user to shared memory, available in every chat.",
        parameters={
            "type": "object",
            "properties": {
                "fact": {"type": "string", "description": "The fact, as a short sentence."}
            },
            "required": ["fact"],
        },
    )

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        fact = arguments.get("fact")
        if not isinstance(fact, str) or not fact.strip():
            raise ToolError("'fact' must be a non-empty string")
        fact = " ".join(fact.split())
        if len(fact) > MAX_FACT_CHARS:
            raise ToolError(f"'fact' is longer than {MAX_FACT_CHARS} characters")
        await context.remember(fact)
        return {"saved": True, "fact": fact}


class UpdateSessionStateTool:
    """Propose a change to session state; the runtime commits it with the turn."""

    spec = ToolSpec(
        name=UPDATE_STATE_TOOL,
        description=(
            "Update this conversation's session state (durable working memory for this chat): "
            "'set' merges top-level keys, 'remove' deletes keys. No secrets."
        ),
        parameters={
            "type": "object",
            "properties": {
                "set": {"type": "object", "description": "Top-level keys to set."},
                "remove": {"type": "array", "items": {"type": "string"}},
            },
        },
    )

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        set_values = arguments.get("set") or {}
        remove = arguments.get("remove") or []
        if not isinstance(set_values, dict):
            raise ToolError("'set' must be an object")
        if not isinstance(remove, list) or not all(isinstance(k, str) for k in remove):
            raise ToolError("'remove' must be a list of keys")
        state = context.state.propose(set_values=set_values, remove=remove)
        return {"state": state, "committed_with_turn": True}


class SearchChatsTool:
    """Find what the user said in their other chats (the directory's message search)."""

    spec = ToolSpec(
        name=SEARCH_CHATS_TOOL,
        description="Search the user's past chats for their own messages about a topic.",
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string", "description": "A few keywords."}},
            "required": ["query"],
        },
    )

    async def run(self, context: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("'query' must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"'query' is longer than {MAX_QUERY_CHARS} characters")
        if context.search is None:
            raise ToolError("searching past chats is not available here")
        return {"results": await context.search(" ".join(query.split()))}


OWNER_CONTEXT_TOOLS: frozenset[str] = frozenset({REMEMBER_TOOL, SEARCH_CHATS_TOOL})
"""The tools that reach past the chat into its owner's directory (shared memory, other
chats): offered only to a run that may use the owner's context (a shared chat's members read
every reply)."""


def offered_tools(
    tools: Mapping[str, Tool], agent_tools: Sequence[str], owner_context: bool
) -> dict[str, Tool]:
    """The tools a run offers: the agent's, less those that reach the owner's directory when
    the run may not (:data:`OWNER_CONTEXT_TOOLS`)."""
    return {
        name: tools[name]
        for name in agent_tools
        if name in tools and (owner_context or name not in OWNER_CONTEXT_TOOLS)
    }


BUILTIN_TOOLS: dict[str, Tool] = {
    REMEMBER_TOOL: RememberTool(),
    UPDATE_STATE_TOOL: UpdateSessionStateTool(),
    SEARCH_CHATS_TOOL: SearchChatsTool(),
}


async def run_tool(
    tools: dict[str, Tool], context: ToolContext, call: ToolCall
) -> tuple[dict[str, Any] | None, str | None]:
    """Run one call: ``(output, None)`` on success, ``(None, error_text)`` otherwise."""
    tool = tools.get(call.name)
    if tool is None:
        return None, f"unknown tool {call.name!r}"
    try:
        return await tool.run(context, call.arguments), None
    except (ToolError, ChatsError, ValueError, TypeError) as exc:
        return None, str(exc)


def stored_input(call: ToolCall) -> dict[str, Any]:
    """The call's input as published and stored (see ``MAX_STORED_INPUT_DEPTH``)."""
    if path_deeper_than(call.arguments, MAX_STORED_INPUT_DEPTH) is None:
        return call.arguments
    return {"omitted": f"the input nests deeper than {MAX_STORED_INPUT_DEPTH} levels"}


def tool_part(call: ToolCall, output: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    """The stored message part for one finished tool call."""
    part: dict[str, Any] = {
        "type": tool_part_type(call.name),
        "toolCallId": call.id,
        "input": stored_input(call),
    }
    if error is None:
        part["state"] = "output-available"
        part["output"] = output if output is not None else {}
    else:
        part["state"] = "output-error"
        part["errorText"] = error
    return part
