"""The history a turn sends: the recent window, the thread summary, and when to compact.

One newest-first scan decides both what the prompt holds and whether the thread is over its
compaction threshold, so a turn reads O(budget) rows however long the thread is; only an
actual compaction reads the whole branch (a one-off per summary).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from itertools import islice
from typing import Any

from backend.models import ModelProvider
from backend.runtime.agents import AgentDefinition
from backend.runtime.compaction import compact_function_for
from backend.runtime.prompt import history_byte_budget, text_of, to_json
from backend.runtime.records import RunRecord
from backend.runtime.run_events import ContextCompacted
from backend.runtime.working_chats import WorkingChat
from backend.sessions import (
    Session,
    StoredCompaction,
    estimate_message_tokens,
    is_compaction_message,
)
from backend.sessions.compaction import PROTECT_HEAD

MAX_TRACKED_SUMMARIES = 4


@dataclass
class Scan:
    window: list[dict[str, Any]]
    tokens: int  # estimate of the branch up to the leaf; a lower bound once over threshold
    summary: str | None = None  # the thread summary covering what the window leaves out


class HistoryWindow:
    """Reads a turn's window and compacts the thread first when it is over the budget."""

    async def read(
        self, conv: WorkingChat, run: RunRecord, agent: AgentDefinition, model: ModelProvider
    ) -> Scan:
        """The turn's recent history; compacts the thread first when it is over the budget.

        ``model`` is the run's: a text model summarises, the offline assistant extracts.
        """
        threshold = agent.model.compact_after_tokens
        budget = history_byte_budget(agent)
        scan = await asyncio.to_thread(
            scan_recent, conv.session, run.user_message_id, budget, threshold, conv.boundaries
        )
        if not needs_compaction(scan.tokens, threshold):
            return scan
        self._install_compaction(conv, agent, model)
        result = await asyncio.to_thread(conv.session.compact, run.user_message_id)
        if result is None:  # nothing worth summarising (too few turns): go on uncompacted
            return scan
        after = await asyncio.to_thread(
            scan_recent, conv.session, run.user_message_id, budget, threshold, conv.boundaries
        )
        version = await asyncio.to_thread(lambda: len(conv.session.get_compactions()))
        conv.publish(
            run.id,
            ContextCompacted(
                from_message_id=result.from_message_id,
                to_message_id=result.to_message_id,
                summary_version=version,
                tokens_before=scan.tokens,
                tokens_after=after.tokens,
            ),
        )
        return after

    def _install_compaction(
        self, conv: WorkingChat, agent: AgentDefinition, model: ModelProvider
    ) -> None:
        if conv.compaction_for == (agent.id, agent.version, model.name):
            return
        fn = compact_function_for(
            model,
            loop=asyncio.get_running_loop(),
            keep_recent_tokens=agent.model.keep_recent_tokens,
        )
        conv.session.on_compaction(fn)
        conv.compaction_for = (agent.id, agent.version, model.name)


def needs_compaction(thread_tokens: int, threshold: int | None) -> bool:
    """A turn compacts the thread first once its estimate passes the agent's threshold."""
    return threshold is not None and thread_tokens > threshold


def path_head(session: Session, message_id: str, count: int) -> list[dict[str, Any]]:
    """``message_id`` and its nearest ancestors, newest first (reads only ``count`` rows).

    Nothing for an id that is not text (a client's ``regenerate`` or edit can send any JSON).
    """
    if not isinstance(message_id, str):
        return []
    return list(islice(session.history(leaf_id=message_id, newest_first=True), count))


@dataclass
class _OverlaySummary:
    """A summary the store applied as an overlay message (the walk met it, not its range)."""

    summary: str


def scan_recent(
    session: Session,
    leaf_id: str,
    byte_budget: int,
    token_threshold: int | None,
    boundary_cache: dict[str, list[str]] | None = None,
) -> Scan:
    """Newest-first walk from ``leaf_id``: the prompt window and a bounded token estimate.

    The window holds the newest messages worth at most ``byte_budget`` bytes (the newest is
    always in). The walk goes on past the window only until it knows whether the branch is
    over ``token_threshold``, and it stops at the thread summary.

    The summary boundary is found *before* the store reaches it: the children of each
    summary's last covered message are known up front (a point read per summary), so the
    walk stops on that child and never pulls the covered message itself. Pulling it would
    make the store read every id of the remaining path to plan overlays (O(thread length));
    and past its 10,000-row walk cap the store stops applying overlays that start near the
    root at all. The messages before the summarised range (the head that set the task) are
    then read from the range's start, a few point reads. So a turn costs the same at 10 or
    10,000 messages, where ``get_recent_history`` / ``token_estimate`` size the whole path.

    ``boundary_cache`` (compaction id → child ids) is kept per conversation: finding children
    is a scan of the message table in the store, so it is paid once per summary. A branch
    created later under a covered message is merely not recognised; the walk then falls back
    to the store's own overlay (correct, just slower).
    """
    cache = boundary_cache if boundary_cache is not None else {}
    boundaries: dict[str, StoredCompaction] = {}
    for compaction in session.get_compactions()[-MAX_TRACKED_SUMMARIES:]:  # newest wins
        if compaction.id not in cache:
            children = session.get_branches(compaction.to_message_id)
            cache[compaction.id] = [str(child["id"]) for child in children]
        for child_id in cache[compaction.id]:
            boundaries[child_id] = compaction
    window: list[dict[str, Any]] = []
    used = 0
    tokens = 0
    window_full = False
    reached: StoredCompaction | _OverlaySummary | None = None
    for message in session.history(leaf_id=leaf_id, newest_first=True):
        message_id = str(message.get("id", ""))
        if is_compaction_message(message):  # an overlay the store did apply
            reached = _OverlaySummary(text_of(message))
            break
        tokens += estimate_message_tokens([message])
        if not window_full:
            size = len(to_json(message).encode("utf-8", "surrogatepass"))
            if window and used + size > byte_budget:
                window_full = True
            else:
                window.append(message)
                used += size
        if message_id in boundaries:
            reached = boundaries[message_id]
            break
        if window_full and (token_threshold is None or tokens > token_threshold):
            break
    window.reverse()
    if reached is None:
        return Scan(window, tokens)
    summary = reached.summary
    summary_part = {"type": "text", "text": summary}
    tokens += estimate_message_tokens([{"role": "assistant", "parts": [summary_part]}])
    if isinstance(reached, _OverlaySummary):
        return Scan(window, tokens, summary)
    head: list[dict[str, Any]] = []
    older = session.history(leaf_id=reached.from_message_id, newest_first=True)
    for message in islice(older, 1, 1 + PROTECT_HEAD):
        head.append(message)
        tokens += estimate_message_tokens([message])
    head.reverse()
    if not window_full:
        window = head + window
    return Scan(window, tokens, summary)
