"""``chats backup`` / ``chats restore`` on PostgreSQL: every table at one instant, restored into
an empty schema, gives the same installation back (same people and passwords, endpoint,
agents, memory, chats with their attachments and search); a schema holding rows is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from backend.agents import AgentSpec
from backend.cli import cli
from backend.config import Settings
from backend.uploads import Upload
from chatsapp.services import Services

pytestmark = pytest.mark.anyio

PASSWORD = "correct horse battery staple"
NOTE = Upload("notes.md", "text/markdown", b"# Oolong\nsteep 3 minutes")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def node(url: str, data_dir: Path) -> Services:
    env = {
        "CHATS_STORAGE": url,
        "CHATS_DATA_DIR": str(data_dir),
        "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
        "CHATS_OFFLINE_CHUNK_DELAY_S": "0",
    }
    return Services(Settings.from_env(env))


def command(url: str, *args: str) -> Result:
    return CliRunner(env={"CHATS_STORAGE": url}).invoke(cli, list(args))


async def populate(app: Services) -> tuple[str, str]:
    """An admin, a person with an agent, memory and a chat answered with an attachment, and an
    endpoint; returns the person's id and the chat's."""
    accounts = app.accounts()
    code = accounts.setup_code_for_console()
    assert code is not None
    admin = accounts.create_first_admin(code, "ada", PASSWORD).user
    bob = accounts.create_user(admin.id, "bob", PASSWORD)
    app.endpoints().save_endpoint(admin.id, "lab", "http://127.0.0.1:9/v1", api_key="k-1")
    agent = app.agents(bob.id).create(AgentSpec(name="Helper", instructions="Be brief."))
    chats = app.directory(bob.id)
    chats.set_shared_context("memory", "- likes tea\n")
    chat_id = chats.create_chat("Tea notes").id
    runtime = app.runtime(bob.id)
    await runtime.bind_agent(chat_id, agent.agent_id)
    await runtime.send_message(chat_id, "what about oolong", attachments=[NOTE.file_part()])
    await runtime.wait_idle(chat_id)
    return bob.id, chat_id


def exported(url: str, folder: Path, chat_id: str) -> dict:
    out = folder / f"{chat_id}.json"
    done = command(url, "--data-dir", str(folder), "export", "--user", "bob", "--out", str(out),
                   chat_id)  # fmt: skip
    assert done.exit_code == 0, done.output
    return json.loads(out.read_text())


async def test_a_restored_backup_is_the_same_installation(
    tmp_path, postgres_server, monkeypatch
) -> None:
    with postgres_server.fresh_database() as source, postgres_server.fresh_database() as target:
        monkeypatch.setenv("CHATS_STORAGE", source)
        app = node(source, tmp_path / "a")
        try:
            bob_id, chat_id = await populate(app)
        finally:
            await app.aclose()
        backup = tmp_path / "backup.zip"
        taken = command(source, "backup", "--out", str(backup))
        assert taken.exit_code == 0, taken.output
        before = exported(source, tmp_path, chat_id)
        assert NOTE.name in json.dumps(before) and "completed" in json.dumps(before)

        restored = command(target, "restore", str(backup))
        assert restored.exit_code == 0, restored.output
        monkeypatch.setenv("CHATS_STORAGE", target)
        assert exported(target, tmp_path, chat_id) == before
        app = node(target, tmp_path / "b")
        try:
            assert app.accounts().sign_in("bob", PASSWORD, "127.0.0.1").user.id == bob_id
            assert app.endpoints().endpoint("lab").base_url == "http://127.0.0.1:9/v1"
            assert [a.name for a in app.agents(bob_id).list_agents()] == ["Helper"]
            chats = app.directory(bob_id)
            assert chats.get_shared_context("memory") == "- likes tea\n"
            assert [hit.chat_id for hit in chats.search_messages("oolong")] == [chat_id]
            # Identity counters continue past the restored rows: new writes work.
            again = await app.runtime(bob_id).send_message(chat_id, "and green tea?")
            await app.runtime(bob_id).wait_idle(chat_id)
            status = (await app.runtime(bob_id).get_run(chat_id, again.run_id)).status
            assert status == "completed"
        finally:
            await app.aclose()

        refused = command(target, "restore", str(backup))
        assert refused.exit_code == 2
        assert "not empty" in refused.output and "restore into a new database" in refused.output


def test_a_backup_of_the_other_engine_is_refused(tmp_path, postgres_url) -> None:
    sqlite_backup = tmp_path / "sqlite.zip"
    (tmp_path / "data").mkdir()
    made = CliRunner(env={"CHATS_STORAGE": "sqlite"}).invoke(
        cli, ["--data-dir", str(tmp_path / "data"), "backup", "--out", str(sqlite_backup)]
    )
    assert made.exit_code == 0, made.output
    refused = command(postgres_url, "restore", str(sqlite_backup))
    assert refused.exit_code == 2 and "chats migrate" in refused.output


def test_both_engines_write_one_backup_manifest() -> None:
    from backend.portability import backup as data_folder_backup
    from backend.storage import pg_backup

    for name in ("BACKUP_FORMAT", "BACKUP_VERSION", "MANIFEST"):
        assert getattr(pg_backup, name) == getattr(data_folder_backup, name), name
