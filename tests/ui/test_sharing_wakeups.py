"""When a worker reads the sharing feed (``chatsapp.live.sharing_wakeups``): at once after a
change made here or announced by another worker on Redis, a fallback read only while a tab is
served, and nothing at all while none is (issue 28 item 2: removal latency, idle cost)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
import redis.asyncio as aioredis

from chatsapp.live.sharing_wakeups import FeedWakeups
from tests.support.app_server import RedisServer, start_redis
from tests.support.deadlines import until

pytestmark = pytest.mark.anyio


class Serving:
    """The bridge's "is a tab connected here?", counting how often it was asked."""

    def __init__(self, serving: bool) -> None:
        self.serving, self.asked = serving, 0

    def __call__(self) -> bool:
        self.asked += 1
        return self.serving


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


async def test_a_worker_serving_no_tab_reads_only_when_a_change_is_made_here() -> None:
    serving = Serving(False)
    wakeups = FeedWakeups(serving)
    wakeups.fallback_poll_s = 0.001
    waiting = asyncio.get_running_loop().create_task(wakeups.wait())
    await until(lambda: serving.asked >= 20)  # twenty fallback intervals passed unread
    assert not waiting.done()
    wakeups.committed_here()
    await until(waiting.done)


async def test_while_a_tab_is_served_the_fallback_read_comes_without_news() -> None:
    serving = Serving(False)
    wakeups = FeedWakeups(serving)
    wakeups.fallback_poll_s = 0.001
    waiting = asyncio.get_running_loop().create_task(wakeups.wait())
    await until(lambda: serving.asked >= 2)
    serving.serving = True  # a tab connected
    await until(waiting.done)


async def test_a_change_made_by_one_worker_wakes_the_other_at_once(
    redis_server: RedisServer,
) -> None:
    """Each worker has its own client, as two processes would; neither serves a tab, so only
    the announcement can wake the other (its fallback read never comes)."""
    clients = [aioredis.Redis.from_url(redis_server.url) for _ in range(2)]
    here, there = (FeedWakeups(Serving(False), client) for client in clients)
    try:
        await until(lambda: there.listening)
        waiting = asyncio.get_running_loop().create_task(there.wait())
        here.committed_here()
        await until(waiting.done)
    finally:
        for wakeups in (here, there):
            await wakeups.aclose()
        for client in clients:
            await client.aclose()
