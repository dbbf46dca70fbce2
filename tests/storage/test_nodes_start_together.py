"""Two nodes starting at once on an empty PostgreSQL database create one schema and raise
nothing: every component's migrations run under the advisory lock, once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.deadlines import CHILD_START_S, WAIT_S
from tests.support.storage_engines import raw_rows

ROOT = Path(__file__).resolve().parents[2]

# What a node opens in its first seconds: accounts, endpoints, sharing, a person's directory
# with its agents, a chat and its runtime records. Each process waits for the go file, so
# both open everything at the same moment.
NODE = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from pathlib import Path
    from backend.config import Settings
    from chatsapp.services import Services

    go = Path(sys.argv[1])
    Path(sys.argv[2]).touch()  # imported: ready to start
    while not go.exists():
        time.sleep(0.005)
    app = Services(Settings.from_env())
    app.accounts(); app.endpoints()
    from backend.sharing import Sharing
    Sharing(app.settings, app.accounts()).close()
    chats = app.directory("shared")
    app.agents("shared")
    chat_id = chats.create_chat(f"from {os.getpid()}").id
    async def reply() -> None:
        runtime = app.runtime("shared")
        await runtime.send_message(chat_id, "hello")
        await runtime.wait_idle(chat_id)
        await app.aclose()
    asyncio.run(reply())
    print("ok")
    """
)


def test_two_nodes_starting_at_once_on_an_empty_database_create_one_schema(
    tmp_path, postgres_url
) -> None:
    go = tmp_path / "go"
    nodes = []
    ready = [tmp_path / "a-ready", tmp_path / "b-ready"]
    for name, ready_file in zip(("a", "b"), ready, strict=True):
        env = {
            **os.environ,
            "CHATS_STORAGE": postgres_url,
            "CHATS_DATA_DIR": str(tmp_path / name),
            "CHATS_OFFLINE_CHUNK_DELAY_S": "0",
        }
        nodes.append(
            subprocess.Popen(
                [sys.executable, "-c", NODE, str(go), str(ready_file)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    deadline = time.monotonic() + CHILD_START_S  # a hang guard: imports take seconds
    while not all(path.exists() for path in ready) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()  # both waiting: they open everything at the same moment
    outputs = [node.communicate(timeout=WAIT_S) for node in nodes]
    for node, (out, err) in zip(nodes, outputs, strict=True):
        assert (node.returncode, out.strip()) == (0, "ok"), err[-3000:]
        assert "Traceback" not in err
    from backend.config import parse_storage

    storage = parse_storage(postgres_url)
    titles = raw_rows(storage, tmp_path, "SELECT count(*) FROM chats")
    assert titles == [(2,)]  # one directory, both nodes' chats in it
    migrations = raw_rows(
        storage, tmp_path, "SELECT count(*), count(DISTINCT (component, name)) FROM _migrations"
    )
    assert migrations[0][0] == migrations[0][1] > 0
