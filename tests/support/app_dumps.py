"""Where a running app stands, for the report of a failed browser story.

Two views: every thread's stack (py-spy, from outside the process) and every asyncio task's
chain of awaits (the app writes it to its log on SIGUSR1, :mod:`chatsapp.hosting.task_dump`).
A hang inside the event loop leaves every thread idle, so only the second shows its cause.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from chatsapp.hosting.task_dump import DUMP_SIGNAL, HEADING
from tests.support.app_server import AppServer
from tests.support.processes import catches, process_tree

DUMP_WAIT_S = 10.0  # a loop that answers no signal in this long is itself the finding


def dump_threads(server: AppServer) -> str:
    """Stacks of every Python thread of the app's processes, when py-spy is installed."""
    py_spy = Path(sys.executable).with_name("py-spy")
    if not py_spy.exists():
        return "py-spy is not installed"
    result = subprocess.run(
        [str(py_spy), "dump", "--pid", str(server.process.pid), "--subprocesses"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    return result.stdout + result.stderr


def dump_tasks(server: AppServer) -> str:
    """Every asyncio task of each of the app's processes that listens for the dump signal
    (a process that does not would be killed by it), as the app writes them to its log."""
    pids = [pid for pid in process_tree(server.process.pid) if catches(pid, DUMP_SIGNAL)]
    if not pids:
        return "no process of the app listens for the task dump signal"
    start = server.log_path.stat().st_size if server.log_path.exists() else 0
    for pid in pids:
        os.kill(pid, DUMP_SIGNAL)
    deadline = time.monotonic() + DUMP_WAIT_S
    written = ""
    while time.monotonic() < deadline:
        written = _log_since(server.log_path, start)
        if written.count(HEADING) >= len(pids):
            break
        time.sleep(0.1)
    if HEADING not in written:
        return f"no task dump in {DUMP_WAIT_S:.0f} s from pids {pids} (the loop is blocked?)"
    return written[written.index(HEADING) :]


def _log_since(path: Path, offset: int) -> str:
    with path.open("rb") as log:
        log.seek(offset)
        return log.read().decode(errors="replace")
