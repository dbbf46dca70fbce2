"""What the production server gives each tab's socket: an uncompressed, quiet connection.

Browsers offer permessage-deflate on every websocket. A compressor per socket would cost the
server 380-520 KB for each open tab (docs/scaling.md), more than all else an idle tab holds,
so the server (chatsapp/hosting/server.py) declines it; the socket still works.
"""

from __future__ import annotations

from websockets.sync.client import connect

from tests.support.app_server import AppServer
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
