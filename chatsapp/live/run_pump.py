"""A chat's run events, applied to its shared conversation state as they happen.

:class:`chatsapp.live.bridge.LiveBridge` runs one pump per chat a tab of this worker shows, and
cancels it when the last such tab has left. Text deltas are batched: a delta that arrives
``FLUSH_INTERVAL_S`` or more after the last flush is flushed with the text buffered before it,
so a fast model does not cost one websocket frame per token; any other event first flushes the
text it follows, so no tab sees a reply end before its last words. There is no timer: text
that arrives within the interval waits for the next delta or event.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import reflex as rx

from backend.runtime import RUN_END_EVENTS, ChatRuntime, RunEvent
from chatsapp.auth.identity import conversation_token
from chatsapp.live.fanout import shared_change
from chatsapp.reflex_seam import ReflexApp

FLUSH_INTERVAL_S = 0.04

# Run events after which a chat's header and meter are re-read: a claim may move a ``latest``
# chat to a new agent version; a reply or a compaction changes what the next turn sends.
SETTINGS_EVENTS = frozenset(("run.started", "context.compacted", *RUN_END_EVENTS))
_IDLE_RUN_FIELDS = {"queued": 0, "streaming": False, "streaming_message_id": ""}


class RunPump:
    """Applies ``chat_id``'s run events (``runtime.subscribe``) to ``conversation`` of the
    chat's shared token, until cancelled."""

    def __init__(
        self,
        app: ReflexApp,
        conversation: type[rx.State],
        runtime: ChatRuntime,
        user_id: str,
        chat_id: str,
    ) -> None:
        self.app = app
        self.conversation = conversation
        self.runtime = runtime
        self.user_id = user_id
        self.chat_id = chat_id
        self._token = conversation_token(chat_id)
        self._buffer: list[str] = []
        self._last_flush = time.monotonic()

    async def run(self) -> AsyncIterator[RunEvent]:
        """Apply each event; yield those of :data:`SETTINGS_EVENTS` once applied (the caller
        re-reads the chat's header then)."""
        async with self._write() as state:
            # A pump that comes back rebuilds these from the log's replay; stale ones would
            # show a reply as streaming forever (the pump that saw it end was released). Set
            # only when stale: each assignment would be a frame to every tab.
            for name, idle in _IDLE_RUN_FIELDS.items():
                if getattr(state, name) != idle:
                    setattr(state, name, idle)
            state.clear_streamed()
        async for event in self.runtime.subscribe(self.chat_id):
            if event.type == "message.delta":
                self._buffer.append(str(event.data.get("text", "")))
                if time.monotonic() - self._last_flush >= FLUSH_INTERVAL_S:
                    await self._flush_text()
                continue
            await self._flush_text()
            async with self._write() as state:
                await apply_run_event(state, self.user_id, event)
            if event.type in SETTINGS_EVENTS:
                yield event

    async def _flush_text(self) -> None:
        if self._buffer:
            text = "".join(self._buffer)
            self._buffer.clear()
            async with self._write() as state:
                state.append_streamed(text)
        self._last_flush = time.monotonic()

    def _write(self) -> Any:
        return shared_change(self.app, self._token, self.conversation)


async def apply_run_event(state: Any, user_id: str, event: RunEvent) -> None:
    """One run event (not a text delta) applied to the conversation view ``state``."""
    kind = event.type
    if kind == "run.queued":
        state.queued += 1
        # The user's message and the placeholder are stored: shown from the event, or read.
        if not state.show_written(event.data):
            await state.refresh(user_id)
    elif kind == "run.started":
        state.queued = max(0, state.queued - 1)
        state.streaming, state.error = True, ""
        state.clear_streamed()
        state.streaming_message_id = str(event.data.get("assistant_message_id", ""))
        # No re-read: the placeholder is already on screen since run.queued, and re-sending
        # the window here would triple the transcript bytes of every turn.
    elif kind == "context.compacted":
        await state.refresh(user_id)
    elif kind in RUN_END_EVENTS:
        state.streaming, state.streaming_message_id = False, ""
        state.clear_streamed()
        if kind == "run.failed":
            state.error = str(event.data.get("error", "The model failed."))
        if not state.show_written(event.data):
            await state.refresh(user_id)
