"""What one idle websocket connection costs the server, with no app behind it.

The app's tabs are websocket connections. This bench serves a bare ASGI echo app under the
app's own server (uvicorn with ``chatsapp.hosting.server.CONNECTION_OPTIONS``) and under granian
(Reflex's stock production server), and the same echo under aiohttp's websocket server as the
baseline, each in a process of its own, connects the same idle clients to each, and prints the
server's RSS growth per connection. It splits ``load_bench.py``'s RSS per idle tab into the
server's share and the app's.

    .venv/bin/python bench/ws_connection_memory.py [--connections 300] [--granian-arg=--http=1]

The granian line names the tungstenite version in granian's binary: from 0.25 on, tungstenite
allocates a 128 KiB read buffer per connection up front (tungstenite-rs#468, #480), and granian
gives it no configuration. That buffer is why the app is served by uvicorn.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp

HERE = Path(__file__).resolve().parent
WARM_CONNECTIONS = 20
SETTLE_S = 3.0
GREETING = "x" * 200  # what the server sends at connect (a small frame, as an idle tab gets)


# ── the servers ─────────────────────────────────────────────────────


async def app(scope: dict[str, Any], receive: Callable[[], Awaitable[dict]], send: Any) -> None:
    """The granian side: an ASGI echo; ``GET /`` answers the worker's pid."""
    if scope["type"] == "lifespan":
        while (message := await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(os.getpid()).encode()})
        return
    await receive()  # websocket.connect
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.send", "text": GREETING})
    while (message := await receive())["type"] != "websocket.disconnect":
        await send({"type": "websocket.send", "text": message.get("text") or ""})


def serve_aiohttp(port: int) -> None:
    """The baseline: the same echo on aiohttp's websocket server."""
    from aiohttp import web

    async def pid(_: web.Request) -> web.Response:
        return web.Response(text=str(os.getpid()))

    async def echo(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(compress=False)
        await ws.prepare(request)
        await ws.send_str(GREETING)
        async for message in ws:
            await ws.send_str(message.data)
        return ws

    server = web.Application()
    server.add_routes([web.get("/", pid), web.get("/ws", echo)])
    web.run_app(server, host="127.0.0.1", port=port, print=None, access_log=None)


def serve_app_server(port: int) -> None:
    """The same echo on the app's server: uvicorn, with every connection option it uses."""
    import uvicorn

    from chatsapp.hosting.server import CONNECTION_OPTIONS

    uvicorn.run(app, host="127.0.0.1", port=port, lifespan="on", log_level="warning",
                **CONNECTION_OPTIONS)  # fmt: skip


# ── measuring ───────────────────────────────────────────────────────


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


async def per_connection_kb(port: int, connections: int) -> tuple[float, int]:
    """(RSS growth per idle connection in the serving process, that process's pid)."""
    url = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        deadline = time.monotonic() + 30
        while True:
            try:
                async with session.get(url + "/") as response:
                    pid = int(await response.text())
                break
            except (aiohttp.ClientError, ValueError):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)
        sockets: list[aiohttp.ClientWebSocketResponse] = []

        async def connect() -> None:
            ws = await session.ws_connect(url + "/ws", compress=0)
            sockets.append(ws)
            await ws.receive(timeout=10)  # the greeting
            await ws.send_str("hello")
            await ws.receive(timeout=10)

        for _ in range(WARM_CONNECTIONS):
            await connect()
        await asyncio.sleep(SETTLE_S)
        before = rss_kb(pid)
        await asyncio.gather(*(connect() for _ in range(connections)))
        await asyncio.sleep(SETTLE_S)
        after = rss_kb(pid)
        await asyncio.gather(*(ws.close() for ws in sockets))
    return (after - before) / connections, pid


def measure(command: list[str], port: int, connections: int, env: dict[str, str]) -> float:
    server = subprocess.Popen(
        command,
        cwd=HERE,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        kb, _ = asyncio.run(per_connection_kb(port, connections))
        return kb
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def tungstenite_version() -> str:
    import granian

    binary = next(Path(granian.__file__).parent.glob("_granian*.so"))
    found = sorted(set(re.findall(rb"tungstenite-(\d+\.\d+\.\d+)", binary.read_bytes())))
    return ", ".join(v.decode() for v in found) or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--granian-arg", action="append", default=[], help="passed to granian")
    parser.add_argument("--serve-aiohttp", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-app-server", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_aiohttp:
        serve_aiohttp(args.serve_aiohttp)
        return 0
    if args.serve_app_server:
        serve_app_server(args.serve_app_server)
        return 0
    import granian
    import uvicorn

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent)])}

    def this_script_serving(flag: str) -> float:
        port = free_port()
        command = [sys.executable, str(Path(__file__).resolve()), flag, str(port)]
        return measure(command, port, args.connections, env)

    app_server_kb = this_script_serving("--serve-app-server")
    port = free_port()
    granian_kb = measure(
        [
            sys.executable, "-m", "granian", "--interface", "asgi", "--workers", "1",
            "--host", "127.0.0.1", "--port", str(port), *args.granian_arg,
            "ws_connection_memory:app",
        ],
        port,
        args.connections,
        env,
    )  # fmt: skip
    aiohttp_kb = this_script_serving("--serve-aiohttp")
    common = (
        f"{args.connections} connections after {WARM_CONNECTIONS} warm ones, no "
        "permessage-deflate, a 200 B frame each way; the per-tab goal is 200 KB"
    )
    print(
        f"ws_connection_rss_app_server: ratio={app_server_kb / max(aiohttp_kb, 0.1):.1f} "
        f"goal=none (uvicorn {uvicorn.__version__} as chatsapp.hosting.server serves, "
        f"{app_server_kb:.0f} KB per idle connection vs aiohttp {aiohttp.__version__}'s "
        f"websocket server {aiohttp_kb:.0f} KB; {common})",
        flush=True,
    )
    print(
        f"ws_connection_rss: ratio={granian_kb / max(aiohttp_kb, 0.1):.1f} goal=none "
        f"(granian {granian.__version__}, Reflex's stock server, {granian_kb:.0f} KB per idle "
        f"connection vs aiohttp's {aiohttp_kb:.0f} KB; granian links tungstenite "
        f"{tungstenite_version()}; granian options: {' '.join(args.granian_arg) or 'defaults'}; "
        f"{common})",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
