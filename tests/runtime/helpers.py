"""Shared helpers of the runtime suites."""

from __future__ import annotations

import asyncio
from typing import Any

from backend.config import Settings
from backend.models import ModelRef
from backend.runtime import ChatRuntime, RunEvent
from backend.runtime.locks import process_owner
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.records import RunKind, RunRecord
from backend.runtime.store import RuntimeStore
from tests.support.deadlines import WAIT_S

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
    timeout_s: float = WAIT_S,
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


def fill_thread(chats: Any, chat_id: str, count: int) -> None:
    """Import ``count`` alternating user/assistant messages of ~25 words into one branch."""
    chat = chats.get_chat(chat_id)
    parent = None
    with chat.sessions.database.transaction():
        for index in range(count):
            message_id = f"h{index:05d}"
            chat.session.import_message(
                {
                    "id": message_id,
                    "role": "user" if index % 2 == 0 else "assistant",
                    "parts": [{"type": "text", "text": f"turn {index} " + "filler " * 20}],
                },
                parent_id=parent,
                created_at=1_700_000_000_000 + index,
            )
            parent = message_id


def leave_a_run_running(
    chats: Any,
    chat_id: str,
    record: Any,
    *,
    reply_metadata: dict[str, Any] | None = None,
    model: ModelRef | None = None,
) -> None:
    """Reply ``a1`` to ``u1`` left ``running`` as run ``run_gone`` by a process that stopped."""
    handle = chats.get_chat(chat_id)
    store = runtime_store_for(handle.database)
    handle.session.append_message(
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
    )
    reply: dict[str, Any] = {
        "id": "a1",
        "role": "assistant",
        "parts": [{"type": "text", "text": "a partial answer"}],
    }
    if reply_metadata is not None:
        reply["metadata"] = reply_metadata
    handle.session.append_message(reply, parent_id="u1")
    store.enqueue_run(
        run_id="run_gone",
        conversation_id=chat_id,
        kind=RunKind.SEND,
        user_message_id="u1",
        assistant_message_id="a1",
        agent_id=record.agent_id,
        agent_version=record.agent_version,
        now=1,
    )
    store.claim_next_run(
        chat_id,
        agent_id=record.agent_id,
        agent_version=record.agent_version,
        now=2,
        claimed_by=process_owner("runtime_that_stopped"),
        model=model,
    )


async def die_mid_run(runtime: ChatRuntime) -> None:
    """``runtime``'s process dies, as far as its chats can tell: its workers and replies stop
    where they are and nothing finalises their runs (they stay ``running`` in the files)."""
    tasks = [t for c in runtime._working.values() for t in (c.worker, c.active.task)]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
