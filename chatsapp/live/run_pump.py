"""A chat's run events, applied to its shared conversation state as they happen.

:mod:`chatsapp.live.bridge` starts one pump per chat a tab of this worker shows, and cancels it when
the last such tab has left. Text deltas are batched into ``FLUSH_INTERVAL_S`` flushes, so a
fast model does not cost one websocket frame per token; any other event first flushes the text
it follows, so no tab sees a reply end before its last words.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import reflex as rx

from backend.runtime import ChatRuntime, RunEvent

FLUSH_INTERVAL_S = 0.04

Modify = Callable[[str, type[rx.State]], AbstractAsyncContextManager[Any]]
"""Locks a state class of a (shared) token, yields it, and sends what changed on exit."""

# Run events after which a chat's header and meter are re-read: a claim may move a ``latest``
# chat to a new agent version; a reply or a compaction changes what the next turn sends.
SETTINGS_EVENTS = frozenset(
    ("run.started", "run.completed", "run.failed", "run.cancelled", "context.compacted")
)
_IDLE_RUN_FIELDS = {"queued": 0, "streaming": False, "streaming_message_id": ""}


async def pump_runs(
    runtime: ChatRuntime,
    user_id: str,
    chat_id: str,
    *,
    token: str,
    conversation: type[rx.State],
    modify: Modify,
    settings_changed: Callable[[], Awaitable[None]],
) -> None:
    """Apply ``chat_id``'s run events (``runtime.subscribe``) to ``conversation`` of ``token``
    until cancelled; ``settings_changed`` runs after each of :data:`SETTINGS_EVENTS`."""
    buffer: list[str] = []
    last_flush = time.monotonic()

    async def flush_text() -> None:
        nonlocal last_flush
        if buffer:
            text = "".join(buffer)
            buffer.clear()
            async with modify(token, conversation) as state:
                state.append_streamed(text)
        last_flush = time.monotonic()

    async with modify(token, conversation) as state:
        # A pump that comes back rebuilds these from the log's replay; stale ones would show
        # a reply as streaming forever (the pump that saw it end was released). Set only when
        # stale: each assignment would be a frame to every tab.
        for name, idle in _IDLE_RUN_FIELDS.items():
            if getattr(state, name) != idle:
                setattr(state, name, idle)
        state.clear_streamed()
    async for event in runtime.subscribe(chat_id):
        kind = event.type
        if kind == "message.delta":
            buffer.append(str(event.data.get("text", "")))
            if time.monotonic() - last_flush >= FLUSH_INTERVAL_S:
                await flush_text()
            continue
        await flush_text()
        async with modify(token, conversation) as state:
            await _apply_run_event(state, user_id, event)
        if kind in SETTINGS_EVENTS:
            await settings_changed()


async def _apply_run_event(state: Any, user_id: str, event: RunEvent) -> None:
    kind = event.type
    if kind == "run.queued":
        state.queued += 1
        await state.refresh(user_id)  # the user's message is already stored: show it
    elif kind == "run.started":
        state.queued = max(0, state.queued - 1)
        state.streaming, state.error = True, ""
        state.clear_streamed()
        state.streaming_message_id = str(event.data.get("assistant_message_id", ""))
        # No re-read: the placeholder is already on screen since run.queued, and re-sending
        # the window here would triple the transcript bytes of every turn.
    elif kind == "context.compacted":
        await state.refresh(user_id)
    elif kind in ("run.completed", "run.failed", "run.cancelled"):
        state.streaming, state.streaming_message_id = False, ""
        state.clear_streamed()
        if kind == "run.failed":
            state.error = str(event.data.get("error", "The model failed."))
        await state.refresh(user_id)
