"""A server that runs for months (issue 14): what the runtime holds stays on a plateau.

2,000 chats are opened, written, watched and released through the runtime's public API, a
few at a time. After a warm-up (caches filling to their caps), open file descriptors, asyncio
tasks, the runtime's open chats and event logs, Python's traced memory and the RSS must stop
growing. The figures are printed (``-s``) at every checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import tracemalloc
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import pytest

from backend.chats import Chats
from backend.models import Finish, ModelEvent, ModelRequest, TextDelta
from backend.runtime import ChatRuntime
from backend.runtime.working_chats import MAX_IDLE_CONVERSATIONS
from tests.runtime.helpers import TERMINAL, make_runtime

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CHATS = 2_000
AT_ONCE = 10  # chats watched and written concurrently
CHECKPOINT_EVERY = 250
WARM_UP = 500  # by then every cache is full: the plateau is measured from here
# Allowed growth from the warm-up to the end. Traced memory: the directory's own rows are on
# disk, so what remains is allocator noise; RSS also holds SQLite's page caches, which
# fill up to their own caps (the directory file grows with every chat).
MAX_TRACED_GROWTH_BYTES = 512 * 1024
# Descriptors wobble by a few between checkpoints (a chat file swapped in the directory's LRU
# of open files holds three: the database, its WAL and its shared memory; up to three such
# swaps can be in flight between two checkpoints), never trend.
FD_WOBBLE = 9
MAX_RSS_GROWTH_RATIO = 1.15


class _SteadyModel:
    """Answers every turn with the same two deltas and records nothing (a test model that
    remembered every request would itself grow with every chat)."""

    name = "steady"
    label = "Steady test model"
    offline = True  # heuristic titles: no extra completions

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        yield TextDelta("fine, ")
        yield TextDelta("thanks")
        yield Finish("stop")

    async def complete(self, prompt: str) -> str:
        return "Title"

    def retrieval_query(self, user_text: str) -> str | None:
        return None


@dataclass(frozen=True)
class Figures:
    chats: int
    fds: int
    tasks: int
    traced_bytes: int
    rss_bytes: int
    open_chats: int
    event_logs: int
    watchers: int

    def line(self) -> str:
        return (
            f"{self.chats:>5} chats: fds={self.fds} tasks={self.tasks} "
            f"traced={self.traced_bytes / 1e6:.2f} MB rss={self.rss_bytes / 1e6:.1f} MB "
            f"open_chats={self.open_chats} event_logs={self.event_logs} "
            f"watchers={self.watchers}"
        )


def _measure(chats_done: int, runtime: ChatRuntime) -> Figures:
    gc.collect()
    footprint = runtime.footprint()
    with open("/proc/self/statm") as statm:
        rss = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return Figures(
        chats=chats_done,
        fds=len(os.listdir("/proc/self/fd")),
        tasks=len(asyncio.all_tasks()),
        traced_bytes=tracemalloc.get_traced_memory()[0],
        rss_bytes=rss,
        open_chats=footprint.open_chats,
        event_logs=footprint.event_logs,
        watchers=footprint.watchers,
    )


async def _one_chat(runtime: ChatRuntime, chats: Chats, n: int) -> None:
    """Open a chat, watch it, write to it, see the reply end, stop watching."""
    chat_id = await asyncio.to_thread(lambda: chats.create_chat().id)
    subscribed = asyncio.Event()

    async def watch() -> str:
        async with contextlib.aclosing(runtime.subscribe(chat_id)) as events:
            subscribed.set()
            async for event in events:
                if event.type in TERMINAL:
                    return event.type
        return "ended"

    watcher = asyncio.ensure_future(watch())
    await subscribed.wait()
    await runtime.send_message(chat_id, f"hello number {n}")
    assert await asyncio.wait_for(watcher, 30) == "run.completed"
    await runtime.wait_idle(chat_id)


class TestTwoThousandChatsThroughTheRuntime:
    async def test_descriptors_tasks_memory_and_runtime_caches_reach_a_plateau(self, tmp_path):
        chats = Chats(tmp_path / "data", "user1")
        runtime = make_runtime(tmp_path, chats, _SteadyModel())
        tracemalloc.start()
        figures: list[Figures] = []
        try:
            baseline_tasks = len(asyncio.all_tasks())
            for start in range(0, CHATS, AT_ONCE):
                await asyncio.gather(
                    *(_one_chat(runtime, chats, n) for n in range(start, start + AT_ONCE))
                )
                done = start + AT_ONCE
                if done % CHECKPOINT_EVERY == 0:
                    figures.append(_measure(done, runtime))
                    print(figures[-1].line(), flush=True)
        finally:
            tracemalloc.stop()
            await runtime.shutdown()
            chats.close()
        warm = next(f for f in figures if f.chats == WARM_UP)
        end = figures[-1]
        plateau = [f.fds for f in figures if f.chats >= WARM_UP]
        assert end.chats == CHATS
        assert max(plateau) - min(plateau) <= FD_WOBBLE
        assert end.fds <= warm.fds + FD_WOBBLE
        assert end.tasks == baseline_tasks
        assert end.watchers == 0
        assert end.open_chats <= MAX_IDLE_CONVERSATIONS
        assert end.event_logs <= MAX_IDLE_CONVERSATIONS
        assert end.traced_bytes - warm.traced_bytes <= MAX_TRACED_GROWTH_BYTES
        assert end.rss_bytes <= warm.rss_bytes * MAX_RSS_GROWTH_RATIO
