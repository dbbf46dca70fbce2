"""Throttled sidebar refreshes: a burst of directory changes costs a refresh per interval.

An import creates thousands of chats; each used to cost a sidebar refresh and a frame to every
tab of the person, and the busy event loop slowed the import itself many times over. The bridge
runs against a real directory and a stand-in for the Reflex app (``tests.support.bridge_views``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.chats import ChatCreated, Chats, ChatSummary
from backend.chats.sidebar import SidebarPage
from backend.config import Settings
from chatsapp import services as services_module
from chatsapp.auth.identity import directory_token
from chatsapp.live.bridge import LiveBridge
from chatsapp.services import Services
from tests.support.bridge_views import ViewRoot
from tests.support.deadlines import WAIT_S, until
from tests.support.fake_reflex_app import FakeReflexApp, every_view

pytestmark = pytest.mark.anyio

# A person of these stories only: the event loop is shared across test files, and a directory
# event an earlier file's worker thread delivers late (for its own person) must not be counted.
USER = "refresh-counter"


class Sidebar:
    """``SharedDirectoryState``'s ``show``: counts the pages shown to ``USER``; a test may hold
    the backend call that reads them at a gate (``started`` counts the calls begun)."""

    def __init__(self) -> None:
        self.reloads = 0
        self.started = 0
        self.gate: threading.Event | None = None
        self.loaded = False  # as an archived list no tab has shown: never re-read
        self.bridge: LiveBridge | None = None  # the fixture's, writing into this sidebar

    def show(self, page: SidebarPage) -> None:
        self.reloads += 1

    async def reload(self, user_id: str, *, touch: bool = True) -> None:
        """As the memory list, re-read when the directory reopens: not what is counted."""


class SidebarStates:
    """``USER``'s shared token holds the one sidebar (its refreshes are what is counted); any
    other person's, a sidebar of their own."""

    def __init__(self, sidebar: Sidebar) -> None:
        self.sidebar = sidebar

    @contextlib.asynccontextmanager
    async def modify_state(self, token: Any) -> AsyncIterator[ViewRoot]:
        mine = token.ident == directory_token(USER)
        yield ViewRoot(self.sidebar if mine else Sidebar())  # type: ignore[arg-type]


@pytest.fixture
def sidebar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sidebar]:
    served = Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
    monkeypatch.setattr(services_module, "_services", served)
    view = Sidebar()
    # Open before the bridge listens, as for a person whose tab is there: a directory opened by
    # the first refresh would be re-read once more (the bridge re-reads a reopened directory).
    mine = served.directory(USER)
    read_page = Chats.sidebar_page

    def gated(chats: Chats, *, with_archived: bool = False) -> SidebarPage:
        if chats is mine:
            view.started += 1
            if view.gate is not None:
                view.gate.wait(WAIT_S)
        return read_page(chats, with_archived=with_archived)

    monkeypatch.setattr(Chats, "sidebar_page", gated)
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
        sidebar.gate = threading.Event()
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
