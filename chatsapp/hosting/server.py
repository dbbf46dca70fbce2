"""The production server: Reflex's own ``run`` command, serving the app with uvicorn.

Reflex 0.10 serves production on granian, whose websocket layer (tungstenite >= 0.25) holds
a 128 KiB read buffer per connection from the moment it opens, with no setting to size it:
~170 KB of server memory per idle tab before the app holds anything (``docs/scaling.md``,
``bench/ws_connection_memory.py``). uvicorn's websocket protocols keep ~20 KB.

``python -m chatsapp.hosting.server [reflex run options]`` is ``reflex run`` with one part swapped:
the step that starts the backend once the pages are built (``run_backend_prod``) is ours.
Everything before it (init, compile, the frontend build, the printed URL) is Reflex's own.
The development server (``--env dev``) stays Reflex's as well.

What the uvicorn server is told, and why:

- **no permessage-deflate**: browsers offer it and uvicorn would accept; a compressor per
  socket costs 380-520 KB of memory per tab (granian never accepted it either);
- **no proxy headers**: ``scope["client"]`` stays the peer that connected. Header-mode sign-in
  trusts a proxy by that address, and sign-in throttling counts it; uvicorn would otherwise
  replace it with ``X-Forwarded-For`` from any local peer;
- **no server-level websocket pings**: engine.io already pings every socket;
- **a bounded graceful stop**: on SIGTERM, sockets are closed (1012, the tabs reconnect to the
  next process), then the lifespan saves every streaming reply, marked interrupted.

``CHATS_WORKERS`` > 1 (with ``REFLEX_REDIS_URL``) runs uvicorn's process supervisor: each
worker is a fresh interpreter that imports the built app, and SIGTERM stops each cleanly.
"""

from __future__ import annotations

import sys
from typing import Any

from backend.config import Settings
from chatsapp.reflex_seam import (
    install_backend_starter,
    production_app_factory,
    run_reflex_cli,
    serve_frontend_from_backend,
)

# uvicorn's websocket protocol on websockets' Sans-I/O core (C-accelerated framing).
WEBSOCKET_PROTOCOL = "websockets-sansio"
# Longest a stop waits for open requests and sockets before the replies are saved anyway.
GRACEFUL_STOP_S = 10.0
# Reflex's "default" level is its own; uvicorn knows the standard names only.
_UVICORN_LEVELS = {"debug", "info", "warning", "error", "critical"}


# How every connection is served (the module docstring says why); benchmarks serve with these.
CONNECTION_OPTIONS: dict[str, Any] = {
    "loop": "asyncio",
    "http": "h11",
    "ws": WEBSOCKET_PROTOCOL,
    "ws_per_message_deflate": False,
    "ws_ping_interval": None,
    "proxy_headers": False,
    "server_header": False,
    "access_log": False,
    "timeout_graceful_shutdown": GRACEFUL_STOP_S,
}


def uvicorn_options(host: str, port: int, log_level: str, workers: int) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` that serve the app."""
    return {
        "app": production_app_factory(),  # "chatsapp.chatsapp:app": rx.App is the ASGI factory
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "lifespan": "on",
        "log_level": log_level if log_level in _UVICORN_LEVELS else "warning",
        **CONNECTION_OPTIONS,
    }


def run_backend_prod(
    host: str,
    port: int,
    loglevel: Any = None,
    mount_frontend_compiled_app: bool = False,
) -> None:
    """Serve the built app: what Reflex's function of this name does, on uvicorn.

    With one worker the server runs in this process; with more, uvicorn's supervisor starts
    them (they read the same environment: Reflex's build flags and the app's settings).
    """
    import uvicorn

    serve_frontend_from_backend(mount_frontend_compiled_app)
    workers = Settings.from_env().workers
    level = str(getattr(loglevel, "value", loglevel or "warning"))
    uvicorn.run(**uvicorn_options(host, port, level, workers))


def install() -> None:
    """Reflex's run command, from now on in this process, starts the backend on uvicorn.

    Reflex's production run looks its backend starter up on ``reflex.utils.exec`` when it
    calls it (``tests/ui/test_server.py`` pins that), so replacing it there is enough.
    """
    install_backend_starter(run_backend_prod)


def main(argv: list[str] | None = None) -> None:
    """``reflex run`` with this module's :func:`run_backend_prod` in place of Reflex's."""
    install()
    run_reflex_cli(["run", *(sys.argv[1:] if argv is None else argv)], prog_name="chats-server")


if __name__ == "__main__":
    main()
