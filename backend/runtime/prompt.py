"""Prompt assembly for one turn, as pure functions (no I/O).

A run gathers its material (system prompt and context blocks of the bound agent, shared
memory frozen at the start of the turn, retrieved past messages, session state, the thread
summary, the recent messages that fit the byte budget) and :func:`build_request` turns it
into a :class:`backend.models.ModelRequest`.

Invariants:

* Context arrives as structured sections (see :mod:`backend.models.types`), never glued text.
* Recent history is trimmed oldest-first to the agent's token budget, one stored message at
  a time: an assistant message and the tool results it carries are never split, and the
  newest message (the user's turn) is always kept.
* Compaction overlays (``compaction_*`` messages) become the ``summary`` section, not turns.
* Empty assistant placeholders (queued or interrupted replies with no parts) are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from backend.attachment_text import document_text_for_model
from backend.models import (
    ContextItem,
    ContextSection,
    ModelMessage,
    ModelRequest,
    ToolCall,
    ToolSpec,
)
from backend.runtime.agents import AgentDefinition
from backend.runtime.tools import stored_input
from backend.sessions import TOOL_PART_PREFIX, estimate_string_tokens, is_compaction_message
from backend.sessions.tokens import CHARS_PER_TOKEN

TOKENS_PER_MESSAGE = 4
# Share of the context budget reserved for the reply and for the system/context sections.
REPLY_RESERVE = 0.25


def message_tokens(messages: Iterable[ModelMessage]) -> int:
    total = 0
    for message in messages:
        total += TOKENS_PER_MESSAGE + estimate_string_tokens(message.content)
        for call in message.tool_calls:
            # stored_input: a model may propose arguments nested too deep to serialise.
            arguments = json.dumps(stored_input(call))
            total += estimate_string_tokens(call.name) + estimate_string_tokens(arguments)
    return total


def request_tokens(request: ModelRequest) -> int:
    """Estimated prompt tokens of ``request`` as sent: system prompt with its context
    sections, the messages, and the tool definitions."""
    total = message_tokens(request.messages)
    system = request.system_prompt()
    if system:
        total += TOKENS_PER_MESSAGE + estimate_string_tokens(system)
    for tool in request.tools:
        total += estimate_string_tokens(
            f"{tool.name} {tool.description} {to_json(tool.parameters)}"
        )
    return total


def history_byte_budget(agent: AgentDefinition) -> int:
    """Bytes of stored history worth reading for this agent (its token budget, in bytes)."""
    return int(agent.model.context_tokens * (1 - REPLY_RESERVE) * CHARS_PER_TOKEN)


def to_json(value: Any) -> str:
    """The JSON text of a message or tool result, as sent and as measured against budgets."""
    return json.dumps(value, ensure_ascii=False, default=str)


def text_of(message: Mapping[str, Any]) -> str:
    """The plain text of a stored message (text parts joined)."""
    parts = message.get("parts") or []
    return "".join(
        str(part.get("text", ""))
        for part in parts
        if isinstance(part, dict) and part.get("type") == "text"
    )


def to_model_messages(message: Mapping[str, Any]) -> list[ModelMessage]:
    """One stored UI message as the model turns it stands for (tool pairs kept together)."""
    role = message.get("role")
    parts = [p for p in message.get("parts") or [] if isinstance(p, dict)]
    if role == "user":
        pieces = []
        for part in parts:
            if part.get("type") == "text":
                pieces.append(str(part.get("text", "")))
            elif part.get("type") == "file":
                document = document_text_for_model(part)
                if document is not None:
                    pieces.append(document)
                    continue
                kind = "image" if str(part.get("mediaType", "")).startswith("image/") else "file"
                name = part.get("filename")
                pieces.append(f"[attached {kind}{': ' + str(name) if name else ''}]")
        return [ModelMessage("user", "\n".join(p for p in pieces if p))]
    if role == "system":
        return [ModelMessage("system", text_of(message))]
    out: list[ModelMessage] = []
    text: list[str] = []
    calls: list[ToolCall] = []
    results: list[ModelMessage] = []

    def flush_tools() -> None:
        if calls:
            out.append(ModelMessage("assistant", "".join(text), tool_calls=tuple(calls)))
            out.extend(results)
            text.clear()
            calls.clear()
            results.clear()

    for part in parts:
        kind = str(part.get("type", ""))
        if kind == "text":
            flush_tools()
            text.append(str(part.get("text", "")))
        elif kind.startswith(TOOL_PART_PREFIX) and part.get("toolCallId"):
            name = kind.removeprefix(TOOL_PART_PREFIX)
            given = part.get("input")
            arguments: dict[str, Any] = given if isinstance(given, dict) else {}
            call = ToolCall(str(part["toolCallId"]), name, arguments)
            calls.append(call)
            if part.get("state") == "output-error":
                result: Any = {"error": part.get("errorText", "tool failed")}
            else:
                result = part.get("output", {})
            results.append(
                ModelMessage("tool", json.dumps(result, default=str), tool_call_id=call.id)
            )
    flush_tools()
    if text and "".join(text):
        out.append(ModelMessage("assistant", "".join(text)))
    return out


def fit_history(
    history: Sequence[Mapping[str, Any]], token_budget: int
) -> tuple[list[ModelMessage], str | None]:
    """Recent turns that fit ``token_budget`` (newest kept), and the summary overlay if any."""
    summary: str | None = None
    units: list[list[ModelMessage]] = []
    for message in history:
        if is_compaction_message(message):
            summary = text_of(message)
            continue
        converted = [m for m in to_model_messages(message) if m.content or m.tool_calls]
        if converted:
            units.append(converted)
    kept: list[list[ModelMessage]] = []
    used = 0
    for unit in reversed(units):
        cost = message_tokens(unit)
        if kept and used + cost > token_budget:
            break
        kept.append(unit)
        used += cost
    kept.reverse()
    # A history must not open with tool results or a dangling assistant turn: trim to a user.
    while len(kept) > 1 and kept[0][0].role != "user":
        kept.pop(0)
    return [m for unit in kept for m in unit], summary


def build_request(
    *,
    agent: AgentDefinition,
    history: Sequence[Mapping[str, Any]],
    tools: Sequence[ToolSpec] = (),
    memory: Mapping[str, str | None] | None = None,
    retrieved: Sequence[ContextItem] = (),
    state: Mapping[str, Any] | None = None,
    summary: str | None = None,
    chat_id: str = "",
    run_id: str = "",
    project: Sequence[ContextSection] = (),
) -> ModelRequest:
    """The model request for a turn. ``history`` ends with the message being answered;
    ``project`` (its chat's project: ``backend.runtime.project_context``) comes right after
    the agent's own prompt."""
    budget = int(agent.model.context_tokens * (1 - REPLY_RESERVE))
    context: list[ContextSection] = list(project)
    for block in agent.context_blocks:
        content = (memory or {}).get(block.label)
        if not content:
            continue
        items = tuple(
            ContextItem(line.strip().removeprefix("- ").strip(), source=block.label)
            for line in content.splitlines()
            if line.strip()
        )
        text = _clip_tokens(content.strip(), block.max_tokens)
        context.append(ContextSection("memory", block.title, text=text, items=items))
    if retrieved:
        context.append(
            ContextSection("retrieval", "From the user's past chats", items=tuple(retrieved))
        )
    if state:
        context.append(
            ContextSection(
                "session_state",
                "Session state (this chat's working memory)",
                text=json.dumps(state, ensure_ascii=False, sort_keys=True, indent=1),
            )
        )
    overhead = sum(estimate_string_tokens(s.render()) for s in context) + estimate_string_tokens(
        agent.system_prompt
    )
    messages, overlay_summary = fit_history(history, max(256, budget - overhead))
    summary = overlay_summary or summary
    if summary:
        context.append(ContextSection("summary", "Summary of earlier turns", text=summary))
    return ModelRequest(
        messages=tuple(messages),
        system=agent.system_prompt,
        context=tuple(context),
        tools=tuple(tools),
        model=agent.model.model,
        temperature=agent.model.temperature,
        max_tokens=agent.model.max_tokens,
        metadata={"chat_id": chat_id, "run_id": run_id, "agent": f"{agent.id}@{agent.version}"},
    )


def _clip_tokens(text: str, max_tokens: int) -> str:
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    # Keep the newest memory (appended last) when the block is over its budget.
    return "…\n" + text[-limit:].split("\n", 1)[-1]
