"""Streamed text reaches the tabs within the flush interval, even when the model stalls.

The run pump batches deltas: one frame per ``FLUSH_INTERVAL_S`` at most, never a word kept
back longer than that. A flush of only the reply's newest piece is a frame sent straight to
the tabs; a merge of pieces, and every other event, a locked write of the shared state that
takes in the newest piece first. Time is a manual clock and the pump's timer sleeps on it, so
these stories neither wait for real time nor depend on how busy the machine is.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from backend.runtime import (
    MessageDelta,
    PublishedRunEvent,
    RunCompleted,
    RunPayload,
    RunQueued,
    RunStarted,
)
from chatsapp.auth.identity import conversation_token
from chatsapp.live.run_pump import FLUSH_INTERVAL_S, RunPump
from chatsapp.live.stream_pieces import BASE_CHARS, PIECE_LEVELS, PIECE_VAR
from tests.support.bridge_views import USER, View, ViewRoot, ViewStates
from tests.support.deadlines import ManualClock, until
from tests.support.fake_reflex_app import FakeReflexApp

pytestmark = pytest.mark.anyio
CHAT = "chat-1"
QUEUED = RunQueued(kind="send", user_message_id="u2", assistant_message_id="r2")


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


class Tab:
    """What a tab shows of the reply: the shared state as each write leaves it (its update),
    then the frames sent straight to it (``chatsapp.live.text_frames``), in that order."""

    def __init__(self) -> None:
        self.pieces = [""] * PIECE_LEVELS
        self.frames: list[dict[str, str]] = []

    async def send(self, key: tuple[str, str], values: dict[str, str]) -> None:
        assert key == (USER, CHAT)
        self.frames.append(values)
        for name, value in values.items():
            self.pieces[int(name.removeprefix(PIECE_VAR))] = value

    @property
    def text(self) -> str:
        return "".join(reversed(self.pieces))


class WrittenStates(ViewStates):
    """Counts the locked writes of the shared state; each one's update reaches ``tab``."""

    def __init__(self, tab: Tab) -> None:
        super().__init__()
        self.tab = tab
        self.writes = 0

    @contextlib.asynccontextmanager
    async def modify_state(self, token: Any) -> AsyncIterator[ViewRoot]:
        async with super().modify_state(token) as root:
            yield root
            self.writes += 1
            self.tab.pieces = root.view.streamed_pieces()


class Pumped:
    def __init__(self) -> None:
        self.clock = ManualClock(start_s=0.0)
        self.timers = ManualTimers(self.clock)
        self.events = ScriptedEvents()
        self.tab = Tab()
        self.states = WrittenStates(self.tab)
        self.app = FakeReflexApp(state_manager=self.states)
        self.pump = RunPump(
            self.app,  # type: ignore[arg-type]
            View,  # type: ignore[arg-type]
            self.events,
            self.tab,
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
            await until(lambda: pumped.tab.text == "Hello")
            assert pumped.timers.pending() == 0

            pumped.delta(", wor")  # within the interval: buffered, and the model stalls
            await pumped.consumed()
            assert pumped.timers.pending() == 1
            assert pumped.tab.text == "Hello"
            pumped.timers.advance(FLUSH_INTERVAL_S / 2)
            await asyncio.sleep(0)
            assert pumped.timers.pending() == 1  # the interval has not ended yet
            assert pumped.tab.text == "Hello"

            pumped.timers.advance(FLUSH_INTERVAL_S)  # (past its end: no rounding in the way)
            await until(lambda: pumped.tab.text == "Hello, wor")

    async def test_deltas_within_one_interval_make_one_flush(self, pumped) -> None:
        async with running(pumped):
            for word in ("one ", "two ", "three"):
                pumped.delta(word)
            await pumped.consumed()
            assert pumped.tab.frames == []  # within the interval of the pump's start
            assert pumped.timers.pending() == 1  # one timer for the whole batch
            pumped.timers.advance(FLUSH_INTERVAL_S)
            await until(lambda: pumped.tab.frames == [{f"{PIECE_VAR}0": "one two three"}])

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
            assert pumped.tab.text == ""


class TestFramesAndWrites:
    async def test_a_flush_of_the_newest_piece_alone_is_a_frame_with_no_locked_write(
        self, pumped
    ) -> None:
        async with running(pumped):
            writes = pumped.states.writes  # the pump's start (stale run fields reset)
            for _ in range(3):
                pumped.clock.advance(2 * FLUSH_INTERVAL_S)  # a whole interval, past rounding
                pumped.delta("word ")
                await pumped.consumed()
            await until(lambda: pumped.tab.text == "word word word ")
            assert len(pumped.tab.frames) == 3
            assert pumped.states.writes == writes
            assert pumped.view.streaming_text == ""  # the shared state: not written yet

    async def test_a_flush_that_merges_pieces_is_a_write_holding_the_text_the_frames_sent(
        self, pumped
    ) -> None:
        async with running(pumped):
            first, second = "a" * (BASE_CHARS - 10), "b" * 20  # the second overflows level 0
            pumped.clock.advance(FLUSH_INTERVAL_S)
            pumped.delta(first)
            await until(lambda: pumped.tab.text == first)
            writes = pumped.states.writes
            pumped.clock.advance(2 * FLUSH_INTERVAL_S)
            pumped.delta(second)
            await until(lambda: pumped.states.writes == writes + 1)
            assert pumped.view.streaming_text == first + second
            assert pumped.tab.text == first + second
            assert len(pumped.tab.frames) == 1  # the merge went as the write's update

    async def test_any_other_event_writes_the_newest_piece_before_it_applies(self, pumped) -> None:
        async with running(pumped):
            pumped.clock.advance(FLUSH_INTERVAL_S)
            pumped.delta("streamed so far")
            await until(lambda: pumped.tab.text == "streamed so far")
            pumped.events.publish(QUEUED)  # another message queued meanwhile
            await until(lambda: len(pumped.view.refreshed) == 1)
            assert pumped.view.streaming_text == "streamed so far"
            assert pumped.tab.text == "streamed so far"

    async def test_a_pump_that_streams_nothing_leaves_the_pieces_another_process_wrote(
        self, pumped
    ) -> None:
        async with running(pumped):
            # Another process streams this reply and merged its pieces into the shared state.
            pumped.view.append_streamed("x" * (BASE_CHARS * 3))
            before = pumped.view.streamed_pieces()
            pumped.events.publish(QUEUED)
            await until(lambda: len(pumped.view.refreshed) == 1)
            assert pumped.view.streamed_pieces() == before

    async def test_a_new_reply_starts_with_no_text_on_any_tab(self, pumped) -> None:
        async with running(pumped):
            pumped.clock.advance(FLUSH_INTERVAL_S)
            pumped.delta("the reply before")
            await until(lambda: pumped.tab.text == "the reply before")
            pumped.events.publish(RunCompleted(assistant_message_id="reply", text="x"))
            pumped.events.publish(
                RunStarted(
                    user_message_id="u2",
                    assistant_message_id="next",
                    agent_id="",
                    agent_version=0,
                    model="m",
                    endpoint="e",
                )
            )
            await until(lambda: pumped.view.streaming_message_id == "next")
            assert pumped.tab.text == ""
