"""Long-thread compaction: which compaction function a conversation uses.

Seed 004: when history outgrows the context budget, older turns become a durable, versioned
summary (the session's compaction overlays, numbered by their order); recent turns and open
tool continuity stay verbatim. Boundaries are chosen by the session's
``create_compact_function`` (it keeps the head, the recent-token tail, and never splits an
assistant tool call from its results); only the *summariser* differs:

* a text model summarises the prompt that function builds (``model.complete``), called from
  the worker thread the compaction runs on, bridged back to the runtime's event loop;
* the offline assistant cannot summarise prose, so it summarises the *messages* of the chosen
  range extractively (first sentence of each), from structured data.
"""

from __future__ import annotations

import asyncio
from typing import Any

from backend.models import ModelProvider, extractive_summary
from backend.models.offline import SUMMARY_MAX_CHARS
from backend.runtime.prompt import text_of
from backend.runtime.records import ThreadSummary
from backend.sessions import (
    CompactionFunction,
    CompactResult,
    Session,
    create_compact_function,
    is_compaction_message,
)

SUMMARY_TIMEOUT_S = 120.0


def thread_summary(session: Session) -> ThreadSummary | None:
    """The thread's newest compacted summary (the session's compaction records), if any."""
    compactions = session.get_compactions()
    if not compactions:
        return None
    newest = compactions[-1]
    return ThreadSummary(
        version=len(compactions),
        summary=newest.summary,
        from_message_id=newest.from_message_id,
        to_message_id=newest.to_message_id,
        created_at=newest.created_at,
    )


def compact_function_for(
    model: ModelProvider, *, loop: asyncio.AbstractEventLoop, keep_recent_tokens: int
) -> CompactionFunction:
    """The ``on_compaction`` function for a conversation answered by ``model``."""
    if not model.offline:

        def summarize(prompt: str) -> str:
            future = asyncio.run_coroutine_threadsafe(model.complete(prompt), loop)
            return future.result(timeout=SUMMARY_TIMEOUT_S)

        return create_compact_function(summarize, keep_recent_tokens=keep_recent_tokens)

    # Offline: let the session's function pick the range, then summarise that range's
    # messages ourselves. Its summarize() is called with a prompt we do not need.
    plan = create_compact_function(lambda _prompt: "range", keep_recent_tokens=keep_recent_tokens)

    def extractive(messages: list[dict[str, Any]]) -> CompactResult | None:
        chosen = plan(messages)
        if chosen is None:
            return None
        ids = [str(m.get("id")) for m in messages]
        start = ids.index(chosen.from_message_id)
        end = ids.index(chosen.to_message_id)
        turns = [
            (str(m.get("role")), text_of(m))
            for m in messages[start : end + 1]
            if not is_compaction_message(m)
        ]
        previous = next((text_of(m) for m in messages if is_compaction_message(m)), "")
        return CompactResult(chosen.from_message_id, chosen.to_message_id, _extend(previous, turns))

    return extractive


def _extend(previous: str, turns: list[tuple[str, str]]) -> str:
    """A new extractive summary that carries the previous one forward, newest lines kept."""
    fresh = extractive_summary(turns)
    if not previous:
        return fresh
    header, _, body = fresh.partition("\n")
    old_lines = [line for line in previous.splitlines()[1:] if line.strip()]
    lines = old_lines + [line for line in body.splitlines() if line.strip()]
    kept: list[str] = []
    budget = SUMMARY_MAX_CHARS - len(header) - 40
    for line in reversed(lines):
        if budget - len(line) - 1 < 0:
            kept.insert(0, "- … earlier turns omitted …")
            break
        kept.insert(0, line)
        budget -= len(line) + 1
    return "\n".join([header or "Summary of earlier turns (extractive):", *kept])
