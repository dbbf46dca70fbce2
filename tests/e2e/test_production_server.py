"""What the production server gives each tab's socket: an uncompressed, quiet connection.

Browsers offer permessage-deflate on every websocket. A compressor per socket would cost the
server 380-520 KB for each open tab (docs/scaling.md), more than all else an idle tab holds,
so the server (chatsapp/hosting/server.py) declines it; the socket still works.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.support.app_server import AppServer, start_app
from tests.support.deadlines import WAIT_S

ENGINE_IO_OPEN = "0"  # the first packet of every engine.io connection


def test_a_socket_offering_compression_as_browsers_do_is_served_without_it(
    app_server: AppServer,
):
    url = app_server.backend_url.replace("http", "ws", 1) + "/_event/?EIO=4&transport=websocket"
    with connect(url, compression="deflate", open_timeout=WAIT_S) as socket:
        assert socket.response is not None
        assert socket.response.status_code == 101
        assert socket.response.headers.get("Sec-WebSocket-Extensions") is None
        assert str(socket.recv(timeout=WAIT_S)).startswith(ENGINE_IO_OPEN)


def test_an_app_that_cannot_start_leaves_the_runs_build_to_the_next(
    app_server: AppServer, tmp_path: Path
):
    """The harness (tests/support/app_server.py): the run's apps serve one build, without
    compiling it again. Each used to compile into it and reinstall the frontend packages in
    the checkout, and one failing to start removed it; then every later app compiled its own
    at the same time (CI's 40 browser failures, "lockfile out of sync")."""
    build = app_server.web_dir
    assert build is not None and not app_server.owns_web_dir
    broken = {"CHATS_PASSWORD_HASH_PROFILE": "no such profile"}
    with pytest.raises(RuntimeError, match="exited early"):
        start_app(tmp_path / "data", tmp_path / "broken.log", env=broken)
    assert build.is_dir() and any(build.iterdir())
    after = start_app(tmp_path / "data", tmp_path / "after.log")
    try:
        assert after.web_dir == build
        assert "Compiling" not in after.log_path.read_text()
    finally:
        after.stop()
