"""A chat's run events, applied to its shared conversation state as they happen.

:class:`chatsapp.live.bridge.LiveBridge` runs one pump per chat a tab of this worker shows, and
cancels it when the last such tab has left. Text deltas are batched so a fast model does not
cost one websocket frame per token: a delta that arrives ``FLUSH_INTERVAL_S`` or more after the
last flush is flushed at once with the text buffered before it; one that arrives sooner waits
for a timer that flushes it when the interval since the last flush ends, even if nothing else
arrives (a model that stalls mid-sentence shows its last words). Any other event first flushes
the text it follows, so no tab sees a reply end before its last words.

A flush that changes only the reply's newest piece is a frame sent straight to the tabs
(:mod:`chatsapp.live.text_frames`: no lock, no state read); one that merges pieces, and every
other event, is a locked write of the shared state, which first takes in the newest piece
those frames sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import reflex as rx

from backend.runtime import (
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
from chatsapp.live.stream_pieces import PIECE_LEVELS, PIECE_VAR, append
from chatsapp.reflex_seam import ReflexApp

FLUSH_INTERVAL_S = 0.04

# Run events after which a chat's header and meter are re-read: a claim may move a ``latest``
# chat to a new agent version; a reply or a compaction changes what the next turn sends.
SETTINGS_EVENTS = RunStarted | ContextCompacted | RunEnd
_IDLE_RUN_FIELDS = {"queued": 0, "streaming": False, "streaming_message_id": ""}


class EventSource(Protocol):
    """Where a pump reads a chat's run events (``ChatRuntime.subscribe``)."""

    def subscribe(self, chat_id: str) -> AsyncIterator[PublishedRunEvent]: ...


class FrameSender(Protocol):
    """Where a pump sends its frames (``chatsapp.live.text_frames.TextFrames``)."""

    async def send(self, key: tuple[str, str], values: dict[str, Any]) -> None: ...


class RunPump:
    """Applies ``chat_id``'s run events (``runtime.subscribe``) to ``conversation`` of the
    chat's shared token, until cancelled."""

    def __init__(
        self,
        app: ReflexApp,
        conversation: type[rx.State],
        runtime: EventSource,
        frames: FrameSender,
        user_id: str,
        chat_id: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.app = app
        self.conversation = conversation
        self.runtime = runtime
        self.frames = frames
        self.user_id = user_id
        self.chat_id = chat_id
        self._token = conversation_token(chat_id)
        self._buffer: list[str] = []
        # The reply's pieces as the tabs hold them; the newest may be ahead of the shared
        # state (sent as a frame, not written yet): ``_newest_ahead``.
        self._pieces = [""] * PIECE_LEVELS
        self._newest_ahead = False
        self._clock, self._sleep = clock, sleep
        self._last_flush = clock()
        # One writer at a time: a timer's flush and the next event's change land in order.
        self._writing = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        self._timer_sleeping = False

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
        try:
            async for event in self.runtime.subscribe(self.chat_id):
                payload = event.payload
                if isinstance(payload, MessageDelta):
                    self._buffer.append(payload.text)
                    waited = self._clock() - self._last_flush
                    if waited >= FLUSH_INTERVAL_S:
                        await self._flush_text()
                    elif self._timer is None:
                        self._timer_sleeping = True  # until it wakes (it may not have begun)
                        self._timer = asyncio.create_task(
                            self._flush_after(FLUSH_INTERVAL_S - waited)
                        )
                    continue
                await self._flush_text()
                async with self._writing, self._write() as state:
                    await apply_run_event(state, self.user_id, payload)
                if isinstance(payload, SETTINGS_EVENTS):
                    yield event
        finally:
            if self._timer is not None:
                self._timer.cancel()

    async def _flush_after(self, delay_s: float) -> None:
        """The timer: flush what is buffered once the interval since the last flush ends."""
        try:
            await self._sleep(delay_s)
        finally:
            self._timer_sleeping = False
        self._timer = None
        await self._flush_text()

    async def _flush_text(self) -> None:
        """Apply the buffered text now (a sleeping timer has nothing left to do: it stops;
        one already writing finishes first, holding ``_writing``)."""
        timer = self._timer
        if timer is not None and self._timer_sleeping and timer is not asyncio.current_task():
            timer.cancel()
            self._timer, self._timer_sleeping = None, False
        async with self._writing:
            if self._buffer:
                text = "".join(self._buffer)
                self._buffer.clear()
                changes = append(self._pieces, text)
                if changes.keys() == {0}:
                    self._pieces[0] = changes[0]
                    self._newest_ahead = True
                    newest = {f"{PIECE_VAR}0": changes[0]}
                    await self.frames.send((self.user_id, self.chat_id), newest)
                else:
                    async with self._write() as state:
                        state.append_streamed(text)
            self._last_flush = self._clock()

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[Any]:
        """The chat's shared conversation state, locked, holding the newest piece the tabs
        were sent; the pieces it holds after the change are what the next flush appends to."""
        async with shared_change(self.app, self._token, self.conversation) as state:
            if self._newest_ahead:
                state.show_newest_piece(self._pieces[0])
                self._newest_ahead = False
            yield state
            self._pieces = state.streamed_pieces()


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
            # Sent even if the state holds no newest piece: a tab served by another process may
            # hold the last one of the reply before (its frame can overtake the end's update).
            state.show_newest_piece("")
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
            if not state.show_written([finished] if finished else [], in_place=True):
                await state.refresh(user_id)
