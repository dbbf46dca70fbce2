from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from backend.chats import Chats
from backend.runtime import ChatRuntime
from backend.runtime.store import RuntimeStore
from backend.storage import Database
from tests.runtime.helpers import make_runtime
from tests.support.fixtures import anyio_backend, fake_openai

__all__ = ["anyio_backend", "chats", "fake_openai", "open_runtime", "store"]


@pytest.fixture
def chats(tmp_path):
    """The directory of ``user1`` under ``tmp_path / "data"`` (closed after the test)."""
    directory = Chats(tmp_path / "data", "user1")
    yield directory
    directory.close()


@pytest.fixture
async def open_runtime(tmp_path, chats) -> AsyncIterator[Callable[..., ChatRuntime]]:
    """``open_runtime(model, **options)``: a runtime over ``chats``, closed after the test
    whether it passed or not (a failed assertion must not leave its workers running)."""
    opened: list[ChatRuntime] = []

    def open_(*args: Any, **options: Any) -> ChatRuntime:
        runtime = make_runtime(tmp_path, chats, *args, **options)
        opened.append(runtime)
        return runtime

    yield open_
    for runtime in reversed(opened):
        await runtime.aclose()  # closing twice is harmless: a test may close it itself


@pytest.fixture
def store(tmp_path):
    """The runtime tables of one chat file, with conversation ``c1`` recorded."""
    db = Database(tmp_path / "chat.sqlite")
    store = RuntimeStore(db)
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
    yield store
    db.close()
