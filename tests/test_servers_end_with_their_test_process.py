"""Every server a test process starts is gone soon after that process is killed outright.

A child Python process plays the test process: it starts a server exactly as the tests do,
prints the server's process group, and is then sent SIGKILL (no finaliser, no fixture
teardown runs). Each server's watchdog (tests/support/watchdog.py) must then stop the whole
group, children included, and remove the server's folder. Chromium has no watchdog:
Playwright's driver closes it when its pipe from the killed process closes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.deadlines import CHILD_START_S, WAIT_S, until

pytestmark = pytest.mark.anyio

# Each prints "<process group> <folder the server owns, or ->", then waits to be killed.
STARTERS = {
    "postgresql": """
        from tests.support.postgres_server import start_postgres
        server = start_postgres()
        print(server.process.pid, server.folder, flush=True)
    """,
    "redis": """
        import sys
        from tests.support.app_server import start_redis
        server = start_redis(sys.argv[1])
        print(server.process.pid, "-", flush=True)
    """,
    # An app server as tests/support/app_server.py launches one: a process group whose
    # leader has children of its own (the app's workers), under the same watchdog.
    "a process group with children": """
        import subprocess
        from tests.support.watchdog import watch
        app = subprocess.Popen(
            ["sh", "-c", "sleep 600 & sleep 600 & wait"], start_new_session=True
        )
        dog = watch(app)
        print(app.pid, "-", flush=True)
    """,
}


def _live_members(group: int) -> list[int]:
    """Processes of ``group`` that are not zombies (a zombie has ended; only its reaping
    parent, here possibly none, is left to clear it)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _parent, process_group = stat.rsplit(")", 1)[1].split()[:3]
        if int(process_group) == group and state != "Z":
            members.append(int(entry.name))
    return members


class _TestProcess:
    """A child Python process running ``starter`` (with ``argument`` as ``sys.argv[1]``)."""

    def __init__(self, starter: str, argument: str = "") -> None:
        script = textwrap.dedent(starter) + "import time\ntime.sleep(600)\n"
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, argument], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )

    async def started(self) -> tuple[int, str]:
        """The process group and folder it printed once its server was up."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(
            asyncio.to_thread(self.process.stdout.readline), CHILD_START_S
        )
        group, folder = line.split()
        return int(group), folder

    def kill(self) -> None:
        """SIGKILL: nothing of the process runs any more, no finaliser, no teardown."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(WAIT_S)


@pytest.mark.parametrize("kind", list(STARTERS))
async def test_a_server_and_its_folder_are_gone_once_its_test_process_is_killed(kind, tmp_path):
    if kind == "postgresql" and os.environ.get("CHATS_TEST_POSTGRES_URL"):
        pytest.skip("a given server: the tests start none")
    test_process = _TestProcess(STARTERS[kind], str(tmp_path))
    try:
        group, folder = await test_process.started()
        assert _live_members(group), "the server runs while its test process does"
    finally:
        test_process.kill()
    await until(lambda: not _live_members(group), what=f"{kind} gone")
    if folder != "-":
        await until(lambda: not Path(folder).exists(), what=f"{kind}'s folder removed")


# Not marked e2e: the browser half's workers run Playwright's loop in their main thread, where
# an async test cannot start; this one drives Chromium only from its child process.
async def test_chromium_is_gone_once_its_test_process_is_killed():
    marker = f"--chats-test-{uuid.uuid4().hex}"  # an unknown switch Chromium ignores
    starter = f"""
        from playwright.sync_api import sync_playwright
        from tests.support.app_server import CHROMIUM, CHROMIUM_ARGS
        playwright = sync_playwright().start()
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, {marker!r}]
        )
        browser.new_page().goto("about:blank")
        print(0, "-", flush=True)
    """

    def chromium_running() -> bool:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                    return "State:\tZ" not in (entry / "status").read_text()
            except OSError:
                continue
        return False

    test_process = _TestProcess(starter)
    try:
        await test_process.started()
        assert chromium_running(), "Chromium runs while its test process does"
    finally:
        test_process.kill()
    await until(lambda: not chromium_running(), what="Chromium gone")
