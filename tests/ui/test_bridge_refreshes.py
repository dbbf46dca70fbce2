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
from chatsapp.live import bridge
from chatsapp.services import Services
from tests.ui.test_bridge_pumps import FakeApp, _Root, until

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

    async def reload(self, user_id: str) -> None:
        if user_id != USER:
            return
        self.started += 1
        if self.gate is not None:
            await self.gate.wait()
        self.reloads += 1


class SidebarApp(FakeApp):
    """Every shared token's state is the one sidebar (the refreshes are what is counted)."""

    def __init__(self, sidebar: Sidebar) -> None:
        super().__init__()
        self.sidebar = sidebar
        self.state_manager = _SidebarStates(sidebar)


class _SidebarStates:
    def __init__(self, sidebar: Sidebar) -> None:
        self.sidebar = sidebar

    @contextlib.asynccontextmanager
    async def modify_state(self, token: Any) -> AsyncIterator[_Root]:
        yield _Root(self.sidebar)  # type: ignore[arg-type]


@pytest.fixture
def sidebar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sidebar]:
    served = Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
    monkeypatch.setattr(services_module, "_services", served)
    monkeypatch.setattr(bridge, "_refreshes", {}, raising=False)
    monkeypatch.setattr(bridge, "_tasks", set())
    for name in (
        "_watched_directories",
        "_agent_saves_seen",
        "_user_tabs",
        "_tab_user",
        "_directory_releases",
    ):
        monkeypatch.setattr(bridge, name, {})
    view = Sidebar()
    states = bridge.LiveStates(
        directory=Sidebar,
        memory=Sidebar,
        conversation=Sidebar,
        archive=Sidebar,
        chat_settings=Sidebar,
    )
    bridge.install(SidebarApp(view), states)
    yield view
    for task in list(bridge._tasks):
        task.cancel()


def created(n: int) -> ChatCreated:
    return ChatCreated(USER, ChatSummary(id=f"c{n}", title=f"Chat {n}", created_at=n, updated_at=n))


class TestSidebarRefreshesAreThrottled:
    async def test_a_single_change_refreshes_the_sidebar_at_once(self, sidebar, monkeypatch):
        monkeypatch.setattr(bridge, "DIRECTORY_REFRESH_S", 3600.0)  # no trailing refresh here
        bridge._capture_loop()
        bridge._on_directory_event(USER, created(1))
        await until(lambda: sidebar.reloads == 1)

    async def test_changes_during_a_refresh_cost_one_more_refresh_not_one_each(
        self, sidebar, monkeypatch
    ):
        monkeypatch.setattr(bridge, "DIRECTORY_REFRESH_S", 0.01)
        bridge._capture_loop()
        sidebar.gate = asyncio.Event()
        bridge._on_directory_event(USER, created(0))
        await until(lambda: sidebar.started == 1)
        for n in range(1, 51):  # each on its own loop turn, as chats an import commits
            bridge._on_directory_event(USER, created(n))
            await asyncio.sleep(0)
        sidebar.gate.set()
        await until(lambda: ("directory", USER) not in bridge._refreshes)  # throttle idle
        assert sidebar.reloads == 2  # the first change, then one for the fifty after it

    async def test_a_change_after_the_burst_is_not_lost(self, sidebar, monkeypatch):
        monkeypatch.setattr(bridge, "DIRECTORY_REFRESH_S", 0.01)
        bridge._capture_loop()
        bridge._on_directory_event(USER, created(0))
        await until(lambda: ("directory", USER) not in bridge._refreshes and sidebar.reloads == 1)
        bridge._on_directory_event(USER, created(1))
        await until(lambda: sidebar.reloads == 2)
