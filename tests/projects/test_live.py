"""Project changes reach open tabs live, whoever makes them: the app's own process, or another.

The live bridge re-reads the shared projects state (``reload``) on a project change of this
process (``Projects.subscribe``: every ``Projects`` of one directory shares its listeners, so
an import's counts too) and on any directory event, which is how another process's commits
arrive (``backend.chats.watch``: the ``chats projects`` CLI, another worker). The bridge runs
against a real directory and a stand-in for the Reflex app, as ``tests/ui``'s bridge tests do.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.chats import Chats
from backend.config import Settings
from backend.projects import Projects
from chatsapp import services as services_module
from chatsapp.live.bridge import LiveBridge, LiveStates
from chatsapp.services import Services
from tests.support.bridge_views import View, ViewRoot
from tests.support.deadlines import CHILD_START_S, until
from tests.support.fake_reflex_app import FakeReflexApp

pytestmark = [pytest.mark.anyio, pytest.mark.sqlite_only]

USER = "live-projects"  # a person of these stories only (the event loop is shared)
ROOT = Path(__file__).resolve().parents[2]


class ProjectsView:
    """``SharedProjectsState.reload``: what each re-read found (project name → chat ids)."""

    def __init__(self, served: Services) -> None:
        self.served = served
        self.shown: dict[str, list[str]] = {}

    async def reload(self, user_id: str, *, touch: bool = True) -> None:
        projects = self.served.projects(user_id, touch=touch)
        self.shown = {
            p.name: [c.id for c in projects.chats_of(p.id)] for p in projects.list_projects()
        }


class Root(ViewRoot):
    """A shared token's tree: the projects view for its class, a bare view for the others."""

    def __init__(self, projects: ProjectsView) -> None:
        super().__init__(View())
        self.projects = projects

    async def get_state(self, cls: type) -> Any:
        return self.projects if cls is ProjectsView else self.view


class States:
    def __init__(self, view: ProjectsView) -> None:
        self.view = view

    @contextlib.asynccontextmanager
    async def modify_state(self, _token: Any) -> AsyncIterator[Root]:
        yield Root(self.view)


@pytest.fixture
def live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Services, ProjectsView]]:
    served = Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
    monkeypatch.setattr(services_module, "_services", served)
    view = ProjectsView(served)
    states = LiveStates(View, View, View, View, View, projects=ProjectsView)  # type: ignore[arg-type]
    bridge = LiveBridge(FakeReflexApp(state_manager=States(view)), states, served)  # type: ignore[arg-type]
    bridge.directory_refresh_s = 0.0
    bridge.install()
    served.directory(USER)  # a tab of the person is there: the bridge listens
    yield served, view
    bridge.stop()


def cli(data_dir: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "backend.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "CHATS_DATA_DIR": str(data_dir), "CHATS_STORAGE": "sqlite"},
        timeout=CHILD_START_S,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_project_made_and_a_chat_moved_by_the_cli_reach_the_open_tabs(live, tmp_path):
    served, view = live
    chat = served.directory(USER).create_chat("tomatoes")
    cli(tmp_path, "projects", "create", "--user", USER, "Garden 🌱")
    await until(lambda: "Garden 🌱" in view.shown)
    cli(tmp_path, "projects", "move", "--user", USER, chat.id, "--to", "Garden 🌱")
    await until(lambda: view.shown.get("Garden 🌱") == [chat.id])
    cli(tmp_path, "projects", "rename", "--user", USER, "Garden 🌱", "Allotment")
    await until(lambda: list(view.shown) == ["Allotment"])


async def test_a_change_through_another_projects_of_this_process_reaches_them(live):
    served, view = live
    chats: Chats = served.directory(USER)
    elsewhere = Projects(chats)  # an import's, say: not the app's own object
    garden = elsewhere.create("Garden")
    await until(lambda: view.shown == {"Garden": []})
    inside = elsewhere.create_chat(garden.id, "inside")
    await until(lambda: view.shown == {"Garden": [inside.id]})
    elsewhere.delete(garden.id, "delete")
    await until(lambda: view.shown == {})
    elsewhere.restore(garden.id)
    await until(lambda: view.shown == {"Garden": [inside.id]})
