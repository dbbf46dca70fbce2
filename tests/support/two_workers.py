"""The app served the production way by two worker processes on one Redis.

What the multi-worker browser stories share: a tab is served by one of the two workers
(``#worker-id``, shown with ``CHATS_EXPOSE_WORKER_ID``), so a story opens tabs until one
lands on the other worker, within :data:`MAX_TABS`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.support.app_server import AppServer, start_app, start_redis
from tests.support.deadlines import WAIT_MS

MAX_TABS = 12  # tabs (or sockets) tried until one lands on the other worker


@contextmanager
def app_on_two_workers(base: Path, env: Mapping[str, str] | None = None) -> Iterator[AppServer]:
    """The app under ``base`` on two workers sharing a Redis (``env`` adds settings); both
    processes and the Redis server are stopped on leaving."""
    redis = start_redis(base)
    try:
        server = start_app(
            base / "data",
            base / "app.log",
            mode="prod",
            env={
                "REFLEX_REDIS_URL": redis.url,
                "CHATS_WORKERS": "2",
                "CHATS_EXPOSE_WORKER_ID": "1",
                **(env or {}),
            },
        )
    except BaseException:
        redis.stop()
        raise
    try:
        yield server
    finally:
        try:
            server.stop()
        finally:
            redis.stop()


def worker_of(page: Page) -> str:
    """The worker process that serves ``page``."""
    locator = page.locator("#worker-id")
    expect(locator).not_to_have_text("", timeout=WAIT_MS)
    return locator.inner_text()
