"""A person's whole life on PostgreSQL leaves nothing in the data folder.

Two app nodes (``Services``) and the ``chats`` command, each with a data folder of its own and
empty, share one database: the first admin is made with the setup code, a person is added, an
agent saved, memory written, a chat with an attachment answered, searched from the other node,
exported and listed by the command, deleted and purged (its rows and the runtime's gone).
Whatever the nodes did, their data folders hold no file at the end: everything a second
machine needs is in PostgreSQL. (The
plain setup code, ``setup-code.txt``, is the one file a node writes there, for its own console
until the first admin exists; it is removed once one does.)
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from backend.agents import AgentSpec
from backend.cli import cli
from backend.config import Settings, parse_storage
from backend.uploads import Upload
from chatsapp.services import Services
from tests.support.storage_engines import raw_rows

pytestmark = pytest.mark.anyio

PASSWORD = "correct horse battery staple"


def node(postgres_url: str, data_dir: Path) -> Services:
    env = {
        "CHATS_STORAGE": postgres_url,
        "CHATS_DATA_DIR": str(data_dir),
        "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
        "CHATS_OFFLINE_CHUNK_DELAY_S": "0",
        "CHATS_SOFT_DELETE_WINDOW_S": "0",
    }
    return Services(Settings.from_env(env))


def files_in(*folders: Path) -> list[Path]:
    return [path for folder in folders if folder.exists() for path in folder.rglob("*")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_whole_life_through_two_nodes_and_the_command_keeps_nothing_on_disk(
    tmp_path, postgres_url, monkeypatch
) -> None:
    monkeypatch.setenv("CHATS_STORAGE", postgres_url)
    folder_a, folder_b, folder_cli = (tmp_path / name for name in ("a", "b", "cli"))
    a, b = node(postgres_url, folder_a), node(postgres_url, folder_b)
    try:
        accounts = a.accounts()
        code = accounts.setup_code_for_console()
        assert code is not None and files_in(folder_a) == [folder_a / "setup-code.txt"]
        admin = accounts.create_first_admin(code, "ada", PASSWORD).user
        assert files_in(folder_a) == []  # the code's file goes with setup
        bob = accounts.create_user(admin.id, "bob", PASSWORD)
        assert (
            b.accounts().sign_in("bob", PASSWORD, "127.0.0.1").user.id == bob.id
        )  # the other node

        agent = a.agents(bob.id).create(AgentSpec(name="Helper", instructions="Be brief."))
        chats = a.directory(bob.id)
        chats.set_shared_context("memory", "- likes tea\n")
        chat_id = chats.create_chat("Tea notes").id
        runtime = a.runtime(bob.id)
        await runtime.bind_agent(chat_id, agent.agent_id)
        note = Upload("notes.md", "text/markdown", b"# Oolong\nsteep 3 minutes")
        ticket = await runtime.send_message(
            chat_id, "what about oolong tea", attachments=[note.file_part()]
        )
        await runtime.wait_idle(chat_id)

        seen = b.directory(bob.id)  # node B: the same sidebar, memory, search, agent
        assert [summary.id for summary in seen.list_chats()] == [chat_id]
        assert seen.get_shared_context("memory") == "- likes tea\n"
        assert [hit.chat_id for hit in seen.search_messages("oolong")] == [chat_id]
        assert [found.agent_id for found in b.agents(bob.id).list_agents()] == [agent.agent_id]
        assert (await b.runtime(bob.id).get_run(chat_id, ticket.run_id)).status == "completed"

        command = CliRunner(env={"CHATS_STORAGE": postgres_url})
        exported = tmp_path / "export.json"
        done = command.invoke(
            cli,
            ["--data-dir", str(folder_cli), "export", "--user", "bob", "--out", str(exported),
             chat_id],
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        document = json.loads(exported.read_text())
        dumped = json.dumps(document)  # the attachment, read back from the database
        assert "notes.md" in dumped and base64.b64encode(note.data).decode() in dumped

        seen.delete_chat(chat_id)  # from node B; the window is 0: purged at once
        seen.sweep()
        listed = command.invoke(cli, ["--data-dir", str(folder_cli), "list", "--user", "bob"])
        assert listed.exit_code == 0 and chat_id not in listed.output
        assert chats.search_messages("oolong") == []
        storage = parse_storage(postgres_url)
        for table in ("session_messages", "runtime_runs", "runtime_conversation"):
            assert raw_rows(storage, tmp_path, f"SELECT count(*) FROM {table}") == [(0,)]
    finally:
        await a.aclose()
        await b.aclose()
    assert files_in(folder_a, folder_b, folder_cli) == []
