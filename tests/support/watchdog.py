"""A server a test process starts goes away with that process, however the process ends.

A test process killed outright (SIGKILL: a CI time limit, a stuck run stopped by hand) runs
no finaliser, so the PostgreSQL, Redis and app servers it started would run on, holding ports,
memory and a folder under /tmp. ``PR_SET_PDEATHSIG`` does not cover them: it follows the
*thread* that forked the server, and the server's own children (an app's workers, the
frontend) are never told. So every server gets a watchdog: a tiny process in a session of its
own (a signal to the test's process group does not reach it) that holds the read end of a
pipe whose write end only the test process holds. However the test process dies, the kernel
closes that end; the watchdog reads end-of-file, stops the server's process group (its first
signal, then SIGKILL after a grace period) and removes the server's folder. A server stopped
normally releases its watchdog, which then leaves without touching anything.

Chromium needs none: Playwright's driver closes the browser when the test process's pipe to
it closes (tests/test_servers_end_with_their_test_process.py shows it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.deadlines import MARGIN_S, WAIT_S

RELEASED = b"released\n"

# Runs with ``python -I -S``: the standard library only, started in milliseconds.
_WATCHDOG = """
import os, shutil, signal, sys, time
pgid, first_signal, grace_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
folder = sys.argv[4]
if sys.stdin.buffer.readline() == b"released\\n":
    sys.exit(0)
def signal_group(number):
    try:
        os.killpg(pgid, number)
        return True
    except ProcessLookupError:
        return False
if signal_group(first_signal):
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and signal_group(0):
        time.sleep(0.05)
    signal_group(signal.SIGKILL)
if folder:
    shutil.rmtree(folder, ignore_errors=True)
"""


@dataclass
class Watchdog:
    """The watchdog of one server; keep it as long as the server runs (dropping it closes
    the pipe, which stops the server)."""

    process: subprocess.Popen[bytes]

    def release(self) -> None:
        """The server was stopped normally: the watchdog leaves, touching nothing."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.write(RELEASED)
                self.process.stdin.close()
            except OSError:  # it is gone already
                pass
        try:
            self.process.wait(WAIT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def watch(
    server: subprocess.Popen[bytes],
    *,
    first_signal: signal.Signals = signal.SIGTERM,
    grace_s: float = MARGIN_S,
    remove: Path | None = None,
) -> Watchdog:
    """A watchdog that stops ``server``'s process group (and removes ``remove``) once this
    process is gone. ``server`` must lead its own group (``start_new_session=True``): the
    watchdog signals the group, so the server's children go too."""
    if os.getpgid(server.pid) != server.pid:
        raise ValueError("the server must lead a process group (start_new_session=True)")
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(server.pid), str(int(first_signal)),
         str(grace_s), str(remove or "")],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    return Watchdog(process)
