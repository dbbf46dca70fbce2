"""The production server is Reflex's run command serving the app on uvicorn, tuned for tabs.

Each tab is a websocket that stays open for hours, so what the server holds per idle socket is
what a deployment pays per person online (docs/scaling.md): no compressor per socket, and the
peer's address is the one that connected (sign-in throttling and header mode trust it).
"""

from __future__ import annotations

import atexit
import os
from typing import Any

import pytest
import uvicorn
from reflex.utils import exec as reflex_exec
from reflex.utils import processes
from reflex_base.constants import RunningMode
from reflex_base.environment import environment

from chatsapp.hosting import server


def _reflex_own_server(*args: Any, **kwargs: Any) -> None:
    raise AssertionError("Reflex's own production server (granian) would have started")


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What ``uvicorn.run`` was asked to serve (nothing is served); Reflex's run command may
    write its settings to the environment, which is put back afterwards."""
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda **options: calls.append(options))
    monkeypatch.setattr(os, "environ", os.environ.copy())
    monkeypatch.setattr(reflex_exec, "run_backend_prod", _reflex_own_server)
    yield calls
    atexit.unregister(processes.atexit_handler)


def test_reflex_run_in_production_starts_the_app_on_uvicorn(started: list[dict[str, Any]]):
    from reflex.reflex import _run_prod

    server.install()
    _run_prod(RunningMode.BACKEND_ONLY, 8123, "127.0.0.1")
    (options,) = started
    assert (options["host"], options["port"]) == ("127.0.0.1", 8123)
    assert options["app"] == "chatsapp.chatsapp:app" and options["factory"]
    assert options["workers"] == 1


def test_a_tab_socket_is_never_compressed_and_its_address_never_rewritten(
    started: list[dict[str, Any]],
):
    server.run_backend_prod("0.0.0.0", 8123, mount_frontend_compiled_app=True)
    (options,) = started
    config = uvicorn.Config(**options)  # every option is one uvicorn knows
    assert config.ws_per_message_deflate is False
    assert config.proxy_headers is False
    assert config.ws == server.WEBSOCKET_PROTOCOL
    assert config.lifespan == "on"  # the lifespan saves streaming replies on SIGTERM
    assert config.timeout_graceful_shutdown == server.GRACEFUL_STOP_S
    assert environment.REFLEX_MOUNT_FRONTEND_COMPILED_APP.get()  # the built pages are served


def test_the_worker_count_comes_from_the_settings(
    started: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("CHATS_WORKERS", "3")
    monkeypatch.setenv("REFLEX_REDIS_URL", "redis://127.0.0.1:6379")
    server.run_backend_prod("0.0.0.0", 8123)
    assert started[0]["workers"] == 3


def test_reflex_log_levels_map_to_uvicorn_levels(started: list[dict[str, Any]]):
    from reflex_base.constants import LogLevel

    for level, expected in [(LogLevel.DEFAULT, "warning"), (LogLevel.DEBUG, "debug")]:
        server.run_backend_prod("0.0.0.0", 8123, level)
        assert started[-1]["log_level"] == expected
