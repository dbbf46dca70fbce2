"""A client token bound on one worker is refused on the other (two workers sharing Redis).

Its own file: it starts an app of its own, and such files run after the stories of the shared
app (an app's start rebuilds the frontend the shared app serves).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatsapp.states.status import WorkerTabState
from tests.e2e.app_server import AppServer, start_app, start_redis
from tests.e2e.raw_client import RawTab
from tests.e2e.test_hostile_tokens import (
    NEW_TITLE,
    SECRETS,
    alice_on,
    alices_tab,
    assert_refused,
    connect_with,
    event,
    stream_and_rename,
)

MAX_THIEVES = 12  # sockets tried until one lands on the worker alice's tab did not use


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """Production mode, two workers sharing state through Redis."""
    base = tmp_path_factory.mktemp("tokens-redis")
    redis = start_redis(base)
    server = start_app(
        base / "data",
        base / "app.log",
        mode="prod",
        env={
            "REFLEX_REDIS_URL": redis.url,
            "GRANIAN_WORKERS": "2",
            "CHATS_EXPOSE_WORKER_ID": "1",
            "CHATS_OFFLINE_CHUNK_DELAY_S": "0.12",
        },
    )
    yield server
    server.stop()
    redis.stop()


def worker_of(tab: RawTab) -> str:
    tab.send(event(WorkerTabState, "load"))
    key = WorkerTabState.get_full_name()
    workers = [(u.get("delta") or {}).get(key, {}).get("worker_rx_state_") for u in tab.settle()]
    return next(w for w in reversed(workers) if w)


class TestABindingSeenByEveryWorker:
    def test_a_token_bound_on_one_worker_is_refused_on_the_other(self, two_workers: AppServer):
        alice = alice_on(two_workers)
        tab = alices_tab(two_workers, alice)
        alices_worker, stolen = worker_of(tab), tab.client_token
        tab.close()
        thieves: list[RawTab] = []
        try:
            while len(thieves) < MAX_THIEVES:
                thieves.append(connect_with(two_workers, stolen, two_workers.session_token("bob")))
                assert_refused(thieves[-1], stolen)
                if worker_of(thieves[-1]) != alices_worker:
                    break
            else:
                pytest.fail(f"all {MAX_THIEVES} sockets landed on worker {alices_worker}")
            other = alices_tab(two_workers, alice)
            try:
                stream_and_rename(other, alice, NEW_TITLE + " 4")
            finally:
                other.close()
            for thief in thieves:
                thief.flush()
                assert not any(secret in thief.text() for secret in SECRETS)
        finally:
            for thief in thieves:
                thief.close()
