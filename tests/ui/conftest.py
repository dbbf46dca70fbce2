"""What the tests of the UI layer share: the anyio backend, the app's services in a temporary
data folder, and a live bridge installed on a fake Reflex app whose states are recording views."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.config import Settings
from chatsapp import services as services_module
from chatsapp.live.bridge import LiveBridge
from chatsapp.services import Services
from tests.support.bridge_views import View, ViewStates
from tests.support.fake_reflex_app import FakeReflexApp, every_view
from tests.support.fixtures import anyio_backend  # noqa: F401


@pytest.fixture
def app_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Services:
    settings = Settings.from_env(
        {"CHATS_DATA_DIR": str(tmp_path / "data"), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
    )
    made = Services(settings)
    monkeypatch.setattr(services_module, "_services", made)
    return made


@pytest.fixture
def live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Services, FakeReflexApp]]:
    env = {"CHATS_DATA_DIR": str(tmp_path), "CHATS_OFFLINE_CHUNK_DELAY_S": "0"}
    served = Services(Settings.from_env(env))
    monkeypatch.setattr(services_module, "_services", served)
    app = FakeReflexApp(state_manager=ViewStates())
    views = every_view(View)
    app.bridge = LiveBridge(app, views, served)  # type: ignore[arg-type]
    app.bridge.release_grace_s = 0.0
    app.bridge.directory_refresh_s = 0.0  # no sidebar refresh lingers
    app.bridge.install()
    yield served, app
    app.bridge.stop()  # no task lingers into the next file
