"""The app served the production way by two worker processes on one Redis.

What the multi-worker browser stories share: a tab is served by one of the two workers
(``#worker-id``, shown with ``CHATS_EXPOSE_WORKER_ID``), so a story opens tabs until one
lands on the other worker (:func:`on_another_worker`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from playwright.sync_api import Page, expect

from chatsapp.states.status import WorkerTabState
from tests.support.app_server import AppServer, start_app, start_redis
from tests.support.deadlines import WAIT_MS, WAIT_S
from tests.support.raw_client import HYDRATE, RawTab

Tab = TypeVar("Tab")


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
        _until_both_workers_serve(server)
        yield server
    finally:
        try:
            server.stop()
        finally:
            redis.stop()


def on_another_worker(
    open_one: Callable[[], tuple[Tab, str]], than: str, set_aside: Callable[[Tab], None]
) -> Tab:
    """A tab served by a worker other than ``than``: ``open_one`` opens a tab and names the
    worker serving it; a tab that lands on ``than`` goes to ``set_aside`` (closed, or kept by
    the story) and another is opened.

    Which of the two processes waiting on the listening socket takes a new connection is the
    kernel's choice, and it is not a fair one: in a fresh-clone run on 2 loaded cores one
    process took 12 browser tabs in a row. So the bound is the suite's hang guard, not a count
    of tabs."""
    deadline = time.monotonic() + WAIT_S
    tried = 0
    while True:
        tab, worker = open_one()
        tried += 1
        if worker != than:
            return tab
        set_aside(tab)
        assert time.monotonic() < deadline, (
            f"all {tried} tabs opened in {WAIT_S:.0f} s landed on worker {than}"
        )


def worker_of(page: Page) -> str:
    """The worker process that serves ``page``."""
    locator = page.locator("#worker-id")
    expect(locator).not_to_have_text("", timeout=WAIT_MS)
    return locator.inner_text()


def raw_worker_of(tab: RawTab, path: str = "/") -> str:
    """The worker process that serves ``tab`` (once everything it sent was handled)."""
    tab.send(f"{WorkerTabState.get_full_name()}.load", path=path)
    key = WorkerTabState.get_full_name()
    workers = [(u.get("delta") or {}).get(key, {}).get("worker_rx_state_") for u in tab.settle()]
    worker = next((w for w in reversed(workers) if w), "")
    assert worker, "CHATS_EXPOSE_WORKER_ID should name the worker"
    return worker


def _until_both_workers_serve(server: AppServer) -> None:
    """Sockets are opened (and closed) until each worker has served one. The app counts as
    started at its first answer, which the first worker ready gives; until the second is
    ready every tab lands on the first, and a story found no tab on the other in 12 tries."""
    token = server.session_token("worker-probe")
    seen: set[str] = set()
    deadline = time.monotonic() + WAIT_S
    while len(seen) < 2:
        assert time.monotonic() < deadline, f"only worker {seen} served a socket in {WAIT_S} s"
        tab = RawTab(server.backend_url, session_token=token).connect()
        try:
            tab.send(HYDRATE, path="/")
            seen.add(raw_worker_of(tab))
        finally:
            tab.close()
