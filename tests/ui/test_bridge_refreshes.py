"""Throttled sidebar refreshes: a burst of directory changes costs a refresh per interval.

An import creates thousands of chats; each used to cost a sidebar refresh and a frame to every
tab of the person, and the busy event loop slowed the import itself many times over. The bridge
runs against a real directory and a stand-in for the Reflex app (``tests/ui/test_bridge_pumps``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.chats import ChatCreated, ChatSummary
from backend.config import Settings
from chatsapp import services as services_module
from chatsapp.live.bridge import LiveBridge
from chatsapp.services import Services
from tests.support.bridge_views import ViewRoot
from tests.support.deadlines import until
from tests.support.fake_reflex_app import FakeReflexApp, every_view

pytestmark = pytest.mark.anyio

# A person of these stories only: the event loop is shared across test files, and a directory
# event an earlier file's worker thread delivers late (for its own person) must not be counted.
USER = "refresh-counter"


class Sidebar:
    """``SharedDirectoryState``'s ``reload``: counts calls for ``USER``; a test may hold them at
    a gate."""

    def __init__(self) -> None:
        self.reloads = 0
        self.started = 0
        self.gate: asyncio.Event | None = None
        self.loaded = False  # as an archived list no tab has shown: never re-read
        self.bridge: LiveBridge | None = None  # the fixture's, writing into this sidebar

    async def reload(self, user_id: str) -> None:
        if user_id != USER:
            return
        self.started += 1
        if self.gate is not None:
            await self.gate.wait()
        self.reloads += 1


class SidebarStates:
    """Every shared token's state is the one sidebar (the refreshes are what is counted)."""

    def __init__(self, sidebar: Sidebar) -> None:
        self.sidebar = sidebar

    @contextlib.asynccontextmanager
    async def modify_state(self, token: Any) -> AsyncIterator[ViewRoot]:
        yield ViewRoot(self.sidebar)  # type: ignore[arg-type]


@pytest.fixture
def sidebar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sidebar]:
    served = Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
    monkeypatch.setattr(services_module, "_services", served)
    view = Sidebar()
    states = every_view(Sidebar)
    view.bridge = LiveBridge(FakeReflexApp(state_manager=SidebarStates(view)), states, served)  # type: ignore[arg-type]
    view.bridge.install()
    yield view
    view.bridge.stop()


def created(n: int) -> ChatCreated:
    return ChatCreated(USER, ChatSummary(id=f"c{n}", title=f"Chat {n}", created_at=n, updated_at=n))


class TestSidebarRefreshesAreThrottled:
    async def test_a_single_change_refreshes_the_sidebar_at_once(self, sidebar, monkeypatch):
        sidebar.bridge.directory_refresh_s = 3600.0  # no trailing refresh here
        sidebar.bridge.directory_event(USER, created(1))
        await until(lambda: sidebar.reloads == 1)

    async def test_changes_during_a_refresh_cost_one_more_refresh_not_one_each(
        self, sidebar, monkeypatch
    ):
        sidebar.bridge.directory_refresh_s = 0.01
        sidebar.gate = asyncio.Event()
        sidebar.bridge.directory_event(USER, created(0))
        await until(lambda: sidebar.started == 1)
        for n in range(1, 51):  # each on its own loop turn, as chats an import commits
            sidebar.bridge.directory_event(USER, created(n))
            await asyncio.sleep(0)
        sidebar.gate.set()
        await until(lambda: not sidebar.bridge.refreshing("directory", USER))  # throttle idle
        assert sidebar.reloads == 2  # the first change, then one for the fifty after it

    async def test_a_change_after_the_burst_is_not_lost(self, sidebar, monkeypatch):
        sidebar.bridge.directory_refresh_s = 0.01
        sidebar.bridge.directory_event(USER, created(0))
        await until(
            lambda: not sidebar.bridge.refreshing("directory", USER) and sidebar.reloads == 1
        )
        sidebar.bridge.directory_event(USER, created(1))
        await until(lambda: sidebar.reloads == 2)
