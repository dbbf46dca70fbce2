"""A server the pool cannot reach: a request fails with the typed "storage unavailable" error
once the engine's pool wait has passed, instead of hanging (``POOL_WAIT_S``).

The wait is shortened here (:data:`SHORT_WAIT_S`), so the test proves the bound without timing
the default: the request gives up after the configured wait and well before the test's
deadline, and it did wait that long first (a blip shorter than the wait costs a wait, not a
failure).
"""

from __future__ import annotations

import threading
import time

import pytest

from backend.config import parse_storage
from backend.storage.postgres import PostgresEngine, PostgresScope, StorageUnavailableError
from backend.storage.postgres import engine as engine_module
from tests.storage.cutting_proxy import CuttingProxy
from tests.support.deadlines import WAIT_S

SHORT_WAIT_S = 0.5


@pytest.fixture
def relay(postgres_url):
    proxy = CuttingProxy(postgres_url)
    yield proxy
    proxy.close()


def attempt(request) -> dict[str, object]:
    """Run ``request`` in a thread; the dict gets ``error`` (or ``value``) and ``seconds``."""
    outcome: dict[str, object] = {}

    def run() -> None:
        started = time.monotonic()
        try:
            outcome["value"] = request()
        except Exception as exc:
            outcome["error"] = exc
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the request hung"
    return outcome


class TestARequestWhenThePoolCannotConnect:
    def test_it_fails_as_storage_unavailable_after_the_configured_wait(self, relay):
        engine = PostgresEngine(parse_storage(relay.url), pool_wait_s=SHORT_WAIT_S)
        try:
            scope = PostgresScope(engine, "test")
            relay.go_down()  # every connection cut, new ones refused
            outcome = attempt(lambda: scope.query("SELECT 1"))
        finally:
            engine.close()
        error = outcome.get("error")
        assert isinstance(error, StorageUnavailableError)
        assert str(error).startswith("storage unavailable")
        assert parse_storage(relay.url).url not in str(error)  # the URL, password and all
        assert outcome["seconds"] >= SHORT_WAIT_S  # it waited the configured time first

    def test_a_write_after_it_fails_the_same_way(self, relay):
        engine = PostgresEngine(parse_storage(relay.url), pool_wait_s=SHORT_WAIT_S)
        try:
            scope = PostgresScope(engine, "test")
            scope.execute("CREATE TABLE t (k text PRIMARY KEY)")
            relay.go_down()
            # The read finds the pooled connection cut and discards it. (A write sent on a
            # connection cut unseen is a commit in doubt instead: backend.storage.postgres.outcome.)
            assert isinstance(attempt(lambda: scope.query("SELECT 1")).get("error"), Exception)
            outcome = attempt(lambda: scope.execute("INSERT INTO t VALUES ('a')"))
        finally:
            engine.close()
        assert isinstance(outcome.get("error"), StorageUnavailableError)
        assert outcome["seconds"] >= SHORT_WAIT_S

    def test_an_engine_takes_the_module_s_wait_when_it_is_made(self, relay, monkeypatch):
        monkeypatch.setattr(engine_module, "POOL_WAIT_S", SHORT_WAIT_S)
        engine = PostgresEngine(parse_storage(relay.url))
        try:
            assert engine.pool_wait_s == SHORT_WAIT_S == engine.pool.timeout
        finally:
            engine.close()
