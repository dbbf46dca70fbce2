"""Streamed text reaches the tabs within the flush interval, even when the model stalls.

The run pump batches deltas: one frame per ``FLUSH_INTERVAL_S`` at most, never a word kept
back longer than that. Time is a manual clock and the pump's timer sleeps on it, so these
stories neither wait for real time nor depend on how busy the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from backend.runtime import MessageDelta, PublishedRunEvent, RunCompleted, RunPayload
from chatsapp.auth.identity import conversation_token
from chatsapp.live.run_pump import FLUSH_INTERVAL_S, RunPump
from tests.support.bridge_views import USER, View, ViewStates
from tests.support.deadlines import ManualClock, until
from tests.support.fake_reflex_app import FakeReflexApp

pytestmark = pytest.mark.anyio
CHAT = "chat-1"


class ManualTimers:
    """``asyncio.sleep`` on a :class:`ManualClock`: a sleeper wakes when the test moves the
    clock past its deadline, never on its own."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.sleeping: list[tuple[float, asyncio.Future[None]]] = []

    async def sleep(self, delay_s: float) -> None:
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.sleeping.append((self.clock() + delay_s, woken))
        await woken

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
        for due, woken in self.sleeping:
            if due <= self.clock() and not woken.done():
                woken.set_result(None)

    def pending(self) -> int:
        return sum(1 for _due, woken in self.sleeping if not woken.done())


class ScriptedEvents:
    """A chat's run events, published by the test one at a time."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[PublishedRunEvent] = asyncio.Queue()
        self.seq = 0

    def publish(self, payload: RunPayload) -> None:
        self.seq += 1
        event = PublishedRunEvent(
            seq=self.seq,
            type=payload.TYPE,
            chat_id=CHAT,
            run_id="run-1",
            data=payload.data(),
            payload=payload,
        )
        self.queue.put_nowait(event)

    async def subscribe(self, chat_id: str) -> AsyncIterator[PublishedRunEvent]:
        while True:
            yield await self.queue.get()


class Pumped:
    def __init__(self) -> None:
        self.clock = ManualClock(start_s=0.0)
        self.timers = ManualTimers(self.clock)
        self.events = ScriptedEvents()
        self.app = FakeReflexApp(state_manager=ViewStates())
        self.pump = RunPump(
            self.app,  # type: ignore[arg-type]
            View,  # type: ignore[arg-type]
            self.events,
            USER,
            CHAT,
            clock=self.clock,
            sleep=self.timers.sleep,
        )

    @property
    def view(self) -> View:
        return self.app.state_manager.views[conversation_token(CHAT)]

    def delta(self, text: str) -> None:
        self.events.publish(MessageDelta(message_id="reply", text=text))

    async def consumed(self) -> None:
        """Every published delta has been taken by the pump (it buffers one without awaiting
        anything, so an empty queue means each is buffered, flushed or timed)."""
        await until(lambda: self.events.queue.empty())


@pytest.fixture
def pumped() -> Iterator[Pumped]:
    yield Pumped()


@contextlib.asynccontextmanager
async def running(pumped: Pumped) -> AsyncIterator[None]:
    async def drain() -> None:
        async for _event in pumped.pump.run():
            pass

    task = asyncio.create_task(drain())
    try:
        await until(lambda: conversation_token(CHAT) in pumped.app.state_manager.views)
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class TestTheFlushTimer:
    async def test_text_held_back_by_the_interval_shows_when_it_ends_with_nothing_else_arriving(
        self, pumped
    ) -> None:
        async with running(pumped):
            pumped.clock.advance(FLUSH_INTERVAL_S)
            pumped.delta("Hello")  # a whole interval after the last flush: applied at once
            await until(lambda: pumped.view.streaming_text == "Hello")
            assert pumped.timers.pending() == 0

            pumped.delta(", wor")  # within the interval: buffered, and the model stalls
            await pumped.consumed()
            assert pumped.timers.pending() == 1
            assert pumped.view.streaming_text == "Hello"
            pumped.timers.advance(FLUSH_INTERVAL_S / 2)
            await asyncio.sleep(0)
            assert pumped.timers.pending() == 1  # the interval has not ended yet
            assert pumped.view.streaming_text == "Hello"

            pumped.timers.advance(FLUSH_INTERVAL_S)  # (past its end: no rounding in the way)
            await until(lambda: pumped.view.streaming_text == "Hello, wor")

    async def test_deltas_within_one_interval_make_one_flush(self, pumped) -> None:
        flushes: list[str] = []
        async with running(pumped):
            original = View.append_streamed

            def counted(view: View, text: str) -> None:
                flushes.append(text)
                original(view, text)

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(View, "append_streamed", counted)
                for word in ("one ", "two ", "three"):
                    pumped.delta(word)
                await pumped.consumed()
                assert flushes == []  # within the interval of the pump's start
                assert pumped.timers.pending() == 1  # one timer for the whole batch
                pumped.timers.advance(FLUSH_INTERVAL_S)
                await until(lambda: flushes == ["one two three"])

    async def test_an_end_event_flushes_first_and_the_timer_then_has_nothing_to_do(
        self, pumped
    ) -> None:
        shown_at_end: list[str] = []
        async with running(pumped):
            original = View.clear_streamed

            def recording(view: View) -> None:
                shown_at_end.append(view.streaming_text)
                original(view)

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(View, "clear_streamed", recording)
                pumped.delta("last words")
                pumped.events.publish(RunCompleted(assistant_message_id="reply", text="x"))
                await until(lambda: len(pumped.view.refreshed) == 1)  # the end was applied
                assert shown_at_end == ["last words"]  # flushed before the reply ended
                assert pumped.timers.pending() == 0  # the timer was stopped
                pumped.timers.advance(FLUSH_INTERVAL_S)
                await asyncio.sleep(0)
                assert pumped.view.streaming_text == ""
