"""Crash safety: a writer killed with SIGKILL at random points never loses an acknowledged
append, never leaves a partial message, and never corrupts the file."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from backend.sessions import Sessions
from tests.conftest import ROOT
from tests.sessions.crash_child import expected

KILLS = 20


def run_and_kill(path: str, run: int, rng: random.Random) -> list[str]:
    """Start a writer, kill it at a random moment, return the ids it acknowledged."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.sessions.crash_child", path, str(run)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    first = child.stdout.readline()  # the writer is up and has committed at least once
    time.sleep(rng.uniform(0.0, 0.25))
    os.kill(child.pid, signal.SIGKILL)
    rest = child.stdout.read()
    child.wait()
    lines = (first + rest).split("\n")
    return [line for line in lines[:-1] if line]  # the last piece may be a torn line


@pytest.mark.slow
@pytest.mark.sqlite_only  # the soundness of the file (PRAGMA integrity_check)
def test_every_acknowledged_append_survives_sigkill_and_the_file_stays_sound(tmp_path):
    path = str(tmp_path / "crash.sqlite")
    rng = random.Random(20_240_601)
    acknowledged: list[str] = []
    for run in range(KILLS):
        acknowledged += run_and_kill(path, run, rng)
        with Sessions(path) as store:
            session = store.session()
            assert store.database.query_one("PRAGMA integrity_check")[0] == "ok"
            stored = [
                row["id"]
                for row in store.database.query(
                    "SELECT id FROM session_messages WHERE session_id = '' ORDER BY seq"
                )
            ]
            # acknowledged ⊆ stored; at most one unacknowledged (committed, not yet printed) per run
            assert set(acknowledged) <= set(stored)
            assert len(stored) - len(acknowledged) <= run + 1
            # nothing partial, acknowledged or not (earlier runs were checked after their kill)
            for message_id in stored:
                if message_id.startswith(f"c{run}-") or run == KILLS - 1:
                    assert session.get_message(message_id) == expected(message_id), message_id
            # every writer appended to the active leaf: the file holds one unbroken chain
            assert [stat.id for stat in session.get_history_row_stats()] == stored
    assert len(acknowledged) > KILLS
