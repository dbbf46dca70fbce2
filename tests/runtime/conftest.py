import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from backend.chats import Chats
from backend.config import PostgresLocation
from backend.runtime import ChatRuntime
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.redis_locks import RedisLockStore
from backend.runtime.store import RuntimeStore
from tests.runtime.helpers import make_runtime
from tests.support.app_server import start_redis
from tests.support.fixtures import anyio_backend, fake_openai
from tests.support.runtime_scopes import file_scope

__all__ = [
    "anyio_backend",
    "chats",
    "closing",
    "fake_openai",
    "locks",
    "open_runtime",
    "redis_url",
    "store",
]


@pytest.fixture
def chats(tmp_path, storage, monkeypatch):
    """The directory of ``user1`` under ``tmp_path / "data"`` (closed after the test), on each
    engine (``CHATS_STORAGE`` from the ``storage`` fixture, for every store the test opens)."""
    monkeypatch.setenv(
        "CHATS_STORAGE", storage.url if isinstance(storage, PostgresLocation) else storage
    )
    directory = Chats(tmp_path / "data", "user1")
    yield directory
    directory.close()


@pytest.fixture
async def closing() -> AsyncIterator[Callable[[ChatRuntime], ChatRuntime]]:
    """``closing(runtime)`` returns ``runtime``, closed after the test whether it passed or
    not (a failed assertion must not leave its workers running)."""
    opened: list[ChatRuntime] = []

    def close_after(runtime: ChatRuntime) -> ChatRuntime:
        opened.append(runtime)
        return runtime

    yield close_after
    for runtime in reversed(opened):
        await runtime.aclose()  # closing twice is harmless: a test may close it itself


@pytest.fixture
def open_runtime(tmp_path, chats, closing) -> Callable[..., ChatRuntime]:
    """``open_runtime(model, **options)``: a runtime over ``chats``, closed after the test."""

    def open_(*args: Any, **options: Any) -> ChatRuntime:
        return closing(make_runtime(tmp_path, chats, *args, **options))

    return open_


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """A ``redis-server`` of the module's own on a free loopback port."""
    server = start_redis(tmp_path_factory.mktemp("redis"))
    yield server.url
    server.stop()


@pytest.fixture
async def locks(redis_url):
    """Run leases on that Redis (a ``FencedLockStore``), keys of the test's own."""
    store = RedisLockStore.from_url(redis_url, prefix=f"test:{uuid.uuid4().hex}:")
    yield store
    await store.aclose()


@pytest.fixture
def store(tmp_path, storage):
    """The runtime tables of one chat's scope, on each engine, with conversation ``c1``."""
    with file_scope(storage, tmp_path / "chat.sqlite") as db:
        yield recorded_conversation(runtime_store_for(db))


def recorded_conversation(store: RuntimeStore) -> RuntimeStore:
    """``store`` with conversation ``c1`` recorded (what every store test starts from)."""
    store.ensure_conversation(
        "c1",
        tenant_id="t",
        owner_principal_id="u",
        participant_ids=("u",),
        agent_id="assistant",
        agent_version_policy="pinned",
        agent_version=1,
        title="",
        now=1,
    )
    return store
