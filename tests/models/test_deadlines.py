"""The idle and total limits around each read of a reply, without a server."""

import asyncio
import contextlib

import pytest

from backend.errors import ModelTimeoutError
from backend.models.deadlines import ReplyDeadlines
from tests.support.deadlines import WAIT_S, ManualClock

pytestmark = pytest.mark.anyio


def timeout(limit):
    return ModelTimeoutError(f"{limit} limit passed", limit=limit)


async def never():
    await asyncio.Event().wait()


async def ready(value="chunk"):
    return value


class TestLimits:
    @pytest.mark.parametrize(
        ("idle_s", "total_s", "limit"), [(0.1, WAIT_S, "idle"), (WAIT_S, 0.1, "total")]
    )
    async def test_a_read_waiting_past_the_nearer_limit_is_a_timeout_naming_it(
        self, idle_s, total_s, limit
    ):
        # The loop's own clock and timer: the far limit is one no loaded machine reaches first.
        with contextlib.closing(ReplyDeadlines(idle_s, total_s, timeout)) as deadlines:
            with pytest.raises(ModelTimeoutError) as caught:
                await deadlines.read(never())
            assert caught.value.limit == limit

    async def test_data_keeps_the_idle_limit_away_but_not_the_total_one(self):
        # A server sending data every 5 s (on a clock that moves only by the test's steps)
        # against an idle limit of 10 s: reads go on until the total limit of 30 s.
        clock = ManualClock()
        with contextlib.closing(ReplyDeadlines(10, 30, timeout, clock)) as deadlines:
            reads = 0
            with pytest.raises(ModelTimeoutError) as caught:
                while True:
                    await deadlines.read(ready())
                    clock.advance(5)
                    deadlines.data_arrived()
                    reads += 1
            assert caught.value.limit == "total"
            assert reads == 6  # the read at 30 s is refused


class TestOnlyReadsAreInterrupted:
    async def test_the_callers_own_work_between_reads_is_never_cancelled(self):
        clock = ManualClock()
        with contextlib.closing(ReplyDeadlines(0.05, WAIT_S, timeout, clock)) as deadlines:
            assert await deadlines.read(ready()) == "chunk"  # arms the timer: 0.05 s real time
            clock.advance(1)  # the caller's work, past the idle limit: must not be cut ...
            # ... and it is still running when the timer fires: the loop runs timers in order,
            # so the one armed first, for less time, fires inside this sleep however busy it is.
            await asyncio.sleep(0.2)
            deadlines.data_arrived()  # the caller came back: the server is not to blame
            assert await deadlines.read(ready("next")) == "next"

    async def test_a_read_after_the_limit_passed_fails_at_once_without_starting(self):
        clock = ManualClock()
        with contextlib.closing(ReplyDeadlines(0.05, WAIT_S, timeout, clock)) as deadlines:
            clock.advance(0.1)
            pending = ready()
            with pytest.raises(ModelTimeoutError):
                await deadlines.read(pending)
            assert pending.cr_frame is None  # closed, not left un-awaited

    async def test_a_cancellation_from_the_caller_stays_a_cancellation(self):
        with contextlib.closing(ReplyDeadlines(WAIT_S, WAIT_S, timeout)) as deadlines:
            reader = asyncio.ensure_future(deadlines.read(never()))
            await asyncio.sleep(0)
            reader.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reader
