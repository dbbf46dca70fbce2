"""The idle and total limits around each read of a reply, without a server."""

import asyncio

import pytest

from backend.errors import ModelTimeoutError
from backend.models.deadlines import ReplyDeadlines

pytestmark = pytest.mark.anyio


def timeout(limit):
    return ModelTimeoutError(f"{limit} limit passed", limit=limit)


async def never():
    await asyncio.Event().wait()


async def ready(value="chunk"):
    return value


class TestLimits:
    @pytest.mark.parametrize(
        ("idle_s", "total_s", "limit"), [(0.1, 60, "idle"), (60, 0.1, "total")]
    )
    async def test_a_read_waiting_past_the_nearer_limit_is_a_timeout_naming_it(
        self, idle_s, total_s, limit
    ):
        deadlines = ReplyDeadlines(idle_s, total_s, timeout)
        with pytest.raises(ModelTimeoutError) as caught:
            await deadlines.read(never())
        assert caught.value.limit == limit
        deadlines.close()

    async def test_data_keeps_the_idle_limit_away_but_not_the_total_one(self):
        # Data every 0.05 s against an idle limit 20 times longer: on two loaded cores a
        # 0.05 s sleep once took past a 0.2 s limit (CI, 2026-12-02).
        deadlines = ReplyDeadlines(1.0, 1.5, timeout)
        reads = 0
        with pytest.raises(ModelTimeoutError) as caught:
            while True:
                await deadlines.read(asyncio.sleep(0.05))  # a server that keeps sending data
                deadlines.data_arrived()
                reads += 1
        assert caught.value.limit == "total"
        assert reads > 1
        deadlines.close()


class TestOnlyReadsAreInterrupted:
    async def test_the_callers_own_work_between_reads_is_never_cancelled(self):
        deadlines = ReplyDeadlines(0.05, 60, timeout)
        assert await deadlines.read(ready()) == "chunk"
        await asyncio.sleep(0.2)  # the caller's work, past the idle limit: must not be cut
        deadlines.data_arrived()  # the caller came back: the server is not to blame
        assert await deadlines.read(ready("next")) == "next"
        deadlines.close()

    async def test_a_read_after_the_limit_passed_fails_at_once_without_starting(self):
        deadlines = ReplyDeadlines(0.05, 60, timeout)
        await asyncio.sleep(0.1)
        pending = ready()
        with pytest.raises(ModelTimeoutError):
            await deadlines.read(pending)
        assert pending.cr_frame is None  # closed, not left un-awaited
        deadlines.close()

    async def test_a_cancellation_from_the_caller_stays_a_cancellation(self):
        deadlines = ReplyDeadlines(60, 60, timeout)
        reader = asyncio.ensure_future(deadlines.read(never()))
        await asyncio.sleep(0)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        deadlines.close()
