"""Several processes on one accounts database (each Reflex worker, the CLI) lose nothing
and cannot both win a race that only one may win."""

from __future__ import annotations

import os
import subprocess
import sys

from backend.accounts import CONSOLE_ACTOR, Accounts
from tests.accounts.conftest import make_settings
from tests.conftest import ROOT
from tests.support.deadlines import CHILD_START_S

USERS_PER_PROCESS = 25


def start_writers(data_dir, *argvs: list[str]) -> list[subprocess.Popen]:
    """Start the writer processes, wait until each has opened the database, then let them go."""
    storage = make_settings(data_dir).storage
    env = {**os.environ, "CHATS_STORAGE": getattr(storage, "url", "sqlite")}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.accounts.concurrent_writer", str(data_dir), *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    (data_dir / "go").touch()
    return processes


def finish(processes: list[subprocess.Popen]) -> list[str]:
    outputs = [process.communicate(timeout=2 * CHILD_START_S)[0] for process in processes]
    assert [process.returncode for process in processes] == [0] * len(processes)
    return outputs


class TestConcurrentProcesses:
    def test_two_processes_creating_users_at_once_lose_none(self, data_dir):
        finish(
            start_writers(
                data_dir,
                ["users", "left", str(USERS_PER_PROCESS)],
                ["users", "right", str(USERS_PER_PROCESS)],
            )
        )
        with Accounts(make_settings(data_dir)) as accounts:
            names = {user.username for user in accounts.list_users(CONSOLE_ACTOR)}
        expected = {f"{side}{n}" for side in ("left", "right") for n in range(USERS_PER_PROCESS)}
        assert names == expected

    def test_two_processes_racing_for_the_first_admin_make_exactly_one(self, data_dir):
        with Accounts(make_settings(data_dir)) as accounts:
            code = accounts.setup_code_for_console()
        outputs = finish(
            start_writers(
                data_dir, ["first-admin", "owner-a", code], ["first-admin", "owner-b", code]
            )
        )
        assert sorted(output.split()[-1] for output in outputs) == ["lost", "won"]
        with Accounts(make_settings(data_dir)) as accounts:
            admins = [user for user in accounts.list_users(CONSOLE_ACTOR) if user.is_admin]
        assert len(admins) == 1
