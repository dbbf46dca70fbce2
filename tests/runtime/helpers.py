"""Shared helpers of the runtime suites."""

from __future__ import annotations

import asyncio
from typing import Any

from backend.config import Settings
from backend.runtime import ChatRuntime, RunEvent
from backend.runtime.records import RunKind, RunRecord
from backend.runtime.store import RuntimeStore

TERMINAL = ("run.completed", "run.failed", "run.cancelled")


def settings(tmp_path, **env: str) -> Settings:
    return Settings.from_env({"CHATS_DATA_DIR": str(tmp_path), **env})


def make_runtime(tmp_path, directory, model, **options: Any) -> ChatRuntime:
    return ChatRuntime(settings(tmp_path), directory, model, **options)


async def events_until_done(
    runtime: ChatRuntime,
    chat_id: str,
    run_id: str,
    *,
    after_seq: int = 0,
    timeout_s: float = 20,
    subscribed: asyncio.Event | None = None,
) -> list[RunEvent]:
    """Every event of ``chat_id`` after ``after_seq`` up to ``run_id``'s terminal event.

    ``subscribed`` is set at the first event: the subscription is in place (and, for a
    runtime's ``subscribe``, the chat's runs were looked at) from then on.
    """

    async def collect() -> list[RunEvent]:
        seen: list[RunEvent] = []
        async for event in runtime.subscribe(chat_id, after_seq=after_seq):
            seen.append(event)
            if subscribed is not None:
                subscribed.set()
            if event.run_id == run_id and event.type in TERMINAL:
                return seen
        return seen

    return await asyncio.wait_for(collect(), timeout_s)


def texts(session) -> list[tuple[str, str]]:
    """(role, text) of the active branch, oldest first."""
    return [
        (m["role"], "".join(p.get("text", "") for p in m["parts"] if p.get("type") == "text"))
        for m in session.get_history()
    ]


def enqueue(store: RuntimeStore, run_id: str, now: int = 1) -> RunRecord:
    """Queue run ``run_id`` on conversation ``c1`` (the ``store`` fixture's)."""
    return store.enqueue_run(
        run_id=run_id,
        conversation_id="c1",
        kind=RunKind.SEND,
        user_message_id=f"u-{run_id}",
        assistant_message_id=f"a-{run_id}",
        agent_id="assistant",
        agent_version=1,
        now=now,
    )
