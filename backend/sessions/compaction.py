"""The reference compaction function: summarise the middle of a conversation, keep both ends.

``create_compact_function(summarize, keep_recent_tokens)`` returns a function that, given the
visible history of a branch (overlays already applied), proposes one range to replace:

* the first ``PROTECT_HEAD`` (3) messages stay verbatim (the head usually sets the task);
* a tail of recent messages worth up to ``keep_recent_tokens`` stays verbatim, and never fewer
  than ``MIN_TAIL_MESSAGES`` (2);
* both boundaries are aligned so an assistant message with tool calls is never separated from
  the messages carrying those calls' results;
* overlay messages (``compaction_*``) are never a range endpoint; the text of an earlier
  overlay is handed to the summariser so the new summary extends it (``compact()`` then widens
  the stored range back to that overlay's start);
* ``summarize(prompt) -> str`` is called once; a blank answer proposes nothing.

Pure code apart from the injected ``summarize``: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from backend.sessions.overlays import is_compaction_message
from backend.sessions.records import CompactResult
from backend.sessions.tokens import estimate_message_tokens
from backend.sessions.tool_parts import is_tool_part, tool_name

PROTECT_HEAD = 3
MIN_TAIL_MESSAGES = 2
DEFAULT_KEEP_RECENT_TOKENS = 20_000
MIN_SUMMARY_BUDGET_TOKENS = 100
SUMMARY_BUDGET_RATIO = 0.2
TOOL_PAYLOAD_PREVIEW_CHARS = 500

Message = dict[str, Any]
CompactionFunction = Callable[[list[Message]], CompactResult | None]
Summarize = Callable[[str], str]


def create_compact_function(
    summarize: Summarize, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS
) -> CompactionFunction:
    """A compaction function for ``Session.on_compaction``; see the module docstring."""

    def compact(messages: list[Message]) -> CompactResult | None:
        count = len(messages)
        if count <= PROTECT_HEAD + MIN_TAIL_MESSAGES:
            return None
        start = align_boundary_forward(messages, PROTECT_HEAD)
        end = find_tail_cut_by_tokens(messages, start, keep_recent_tokens, MIN_TAIL_MESSAGES)
        if end <= start:
            return None
        middle = [m for m in messages[start:end] if not is_compaction_message(m)]
        if not middle:
            return None
        previous = next((_text_of(m) for m in messages if is_compaction_message(m)), None)
        budget = max(
            MIN_SUMMARY_BUDGET_TOKENS,
            int(estimate_message_tokens(middle) * SUMMARY_BUDGET_RATIO),
        )
        summary = summarize(build_summary_prompt(middle, previous, budget))
        if not isinstance(summary, str) or not summary.strip():
            return None
        return CompactResult(middle[0]["id"], middle[-1]["id"], summary)

    return compact


# ── tool call / result alignment ────────────────────────────────────────


def _tool_parts(message: Message) -> list[dict[str, Any]]:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return []
    return [part for part in parts if isinstance(part, dict) and is_tool_part(part.get("type"))]


def _makes_tool_calls(message: Message) -> bool:
    return message.get("role") == "assistant" and bool(_tool_parts(message))


def _call_ids(message: Message) -> set[str]:
    return {
        part["toolCallId"]
        for part in _tool_parts(message)
        if isinstance(part.get("toolCallId"), str)
    }


def _answers(message: Message, call_ids: set[str]) -> bool:
    """True if ``message`` carries a result (any tool part) for one of ``call_ids``."""
    return any(part.get("toolCallId") in call_ids for part in _tool_parts(message))


def align_boundary_forward(messages: Sequence[Message], index: int) -> int:
    """Move a range start past the results of a tool-calling message just before it."""
    if index <= 0 or index >= len(messages):
        return index
    previous = messages[index - 1]
    if _makes_tool_calls(previous):
        call_ids = _call_ids(previous)
        while index < len(messages) and _answers(messages[index], call_ids):
            index += 1
    return index


def align_boundary_backward(messages: Sequence[Message], index: int) -> int:
    """Move a range end back so the tool calls whose results follow it are kept with them."""
    if index <= 0 or index >= len(messages):
        return index
    while index > 0:
        message = messages[index]
        if _makes_tool_calls(message):
            break
        previous = messages[index - 1]
        if _makes_tool_calls(previous) and _answers(message, _call_ids(previous)):
            index -= 1
            continue
        break
    return index


def find_tail_cut_by_tokens(
    messages: Sequence[Message],
    head_end: int,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    min_tail_messages: int = MIN_TAIL_MESSAGES,
) -> int:
    """Index where the verbatim tail starts: as many recent tokens as the budget allows (at least
    one message), never fewer than ``min_tail_messages``, aligned on tool call groups."""
    count = len(messages)
    accumulated = 0
    token_cut = count
    for index in range(count - 1, head_end - 1, -1):
        tokens = estimate_message_tokens([messages[index]])
        if accumulated + tokens > keep_recent_tokens and token_cut < count:
            break
        accumulated += tokens
        token_cut = index
    min_cut = count - min_tail_messages
    cut = min(token_cut, min_cut) if min_cut >= head_end else token_cut
    return align_boundary_backward(messages, cut)


# ── summary prompt ──────────────────────────────────────────────────────

_SECTIONS = """## Topic
[What the conversation is about]

## Key Points
[Important facts, decisions and conclusions]

## Current State
[What has been done and what is in progress]

## Open Items
[Unanswered questions, pending tasks, agreed next steps]"""

_RULES = (
    "Aim for about {budget} tokens. State only what the conversation says: do not invent "
    "names, paths, commands or details. Reply with the summary body only."
)


def build_summary_prompt(
    messages: Sequence[Message], previous_summary: str | None, budget: int
) -> str:
    """The prompt ``summarize`` receives: the turns to fold in, and the summary to extend."""
    transcript = "\n\n---\n\n".join(_render(message) for message in messages)
    rules = _RULES.format(budget=budget)
    if previous_summary:
        return (
            "You are updating the running summary of a conversation with the turns that "
            "happened since it was written.\n\n"
            f"PREVIOUS SUMMARY:\n{previous_summary}\n\n"
            f"NEW TURNS:\n{transcript}\n\n"
            "Keep what is still relevant, add what is new, drop only what is clearly obsolete. "
            f"Use this structure:\n\n{_SECTIONS}\n\n{rules}"
        )
    return (
        "Summarise this conversation so it can stand in for the turns below in future "
        "context.\n\n"
        f"CONVERSATION:\n{transcript}\n\n"
        f"Use this structure:\n\n{_SECTIONS}\n\n{rules}"
    )


def _render(message: Message) -> str:
    lines = [f"[{message.get('role', 'unknown')}]"]
    text = _text_of(message)
    if text:
        lines.append(text)
    for part in _tool_parts(message):
        lines.append(f"[Tool: {tool_name(part)}]")
        if part.get("input") is not None:
            lines.append(f"Input: {_preview(part['input'])}")
        output = part.get("output", part.get("result"))
        if output is not None:
            lines.append(f"Output: {_preview(output)}")
    return "\n".join(lines)


def _preview(value: object) -> str:
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return value[:TOOL_PAYLOAD_PREVIEW_CHARS]


def _text_of(message: Message) -> str:
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    return "\n".join(
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    )
