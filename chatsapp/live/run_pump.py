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

from backend.runtime import (
    ChatRuntime,
    ContextCompacted,
    MessageDelta,
    PublishedRunEvent,
    RunCancelled,
    RunCompleted,
    RunEnd,
    RunFailed,
    RunPayload,
    RunQueued,
    RunStarted,
)
from chatsapp.auth.identity import conversation_token
from chatsapp.live.fanout import shared_change
from chatsapp.reflex_seam import ReflexApp

FLUSH_INTERVAL_S = 0.04

# Run events after which a chat's header and meter are re-read: a claim may move a ``latest``
# chat to a new agent version; a reply or a compaction changes what the next turn sends.
SETTINGS_EVENTS = RunStarted | ContextCompacted | RunEnd
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

    async def run(self) -> AsyncIterator[PublishedRunEvent]:
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
            payload = event.payload
            if isinstance(payload, MessageDelta):
                self._buffer.append(payload.text)
                if time.monotonic() - self._last_flush >= FLUSH_INTERVAL_S:
                    await self._flush_text()
                continue
            await self._flush_text()
            async with self._write() as state:
                await apply_run_event(state, self.user_id, payload)
            if isinstance(payload, SETTINGS_EVENTS):
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


async def apply_run_event(state: Any, user_id: str, payload: RunPayload) -> None:
    """One run event (not a text delta) applied to the conversation view ``state``."""
    match payload:
        case RunQueued(written=written):
            state.queued += 1
            # The user's message and the placeholder are stored: shown from the event, or read.
            if not state.show_written(written):
                await state.refresh(user_id)
        case RunStarted(assistant_message_id=message_id):
            state.queued = max(0, state.queued - 1)
            state.streaming, state.error = True, ""
            state.clear_streamed()
            state.streaming_message_id = message_id
            # No re-read: the placeholder is already on screen since run.queued, and re-sending
            # the window here would triple the transcript bytes of every turn.
        case ContextCompacted():
            await state.refresh(user_id)
        case RunCompleted() | RunFailed() | RunCancelled():
            state.streaming, state.streaming_message_id = False, ""
            state.clear_streamed()
            if isinstance(payload, RunFailed):
                state.error = payload.error or "The model failed."
            finished = getattr(payload, "written", None)  # a reply another process ended: none
            if not state.show_written([finished] if finished else []):
                await state.refresh(user_id)
