"""A separate process writing one accounts database, for the concurrency tests.

``python -m tests.accounts.concurrent_writer DATA_DIR users PREFIX COUNT`` creates COUNT users;
``... DATA_DIR first-admin USERNAME CODE`` tries to become the first admin and prints
``won`` or ``lost``. Both wait for ``DATA_DIR/go`` to exist, so the processes start together.
The engine is ``CHATS_STORAGE`` of the environment (the test's own).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from pathlib import Path

from backend.accounts import CONSOLE_ACTOR, Accounts
from backend.config import Settings
from backend.errors import InvalidSetupCodeError
from tests.support.deadlines import CHILD_START_S

PASSWORD = "correct horse battery staple"


def main(data_dir: Path, action: str, *args: str) -> None:
    settings = dataclasses.replace(
        Settings.from_env(
            {
                "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
                "CHATS_STORAGE": os.environ.get("CHATS_STORAGE", ""),
            }
        ),
        data_dir=data_dir,
    )
    with Accounts(settings) as accounts:
        print("ready", flush=True)
        deadline = time.monotonic() + CHILD_START_S  # the other writers' start
        while not (data_dir / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        if action == "users":
            prefix, count = args[0], int(args[1])
            for n in range(count):
                accounts.create_user(CONSOLE_ACTOR, f"{prefix}{n}", PASSWORD)
        elif action == "first-admin":
            try:
                accounts.create_first_admin(args[1], args[0], PASSWORD)
                print("won", flush=True)
            except InvalidSetupCodeError:
                print("lost", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], *sys.argv[3:])
