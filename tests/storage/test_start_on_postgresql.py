"""The app and the ``chats`` command start on a ``postgresql://`` URL, and refuse to start, with a
sentence naming host and database (never the password) and a non-zero exit, when the server
cannot be reached."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from backend.cli import cli
from backend.config import POSTGRES_ROOT, Settings
from backend.data_folder import SETUP_CODE_FILE
from backend.storage.postgres import StorageUnavailableError
from chatsapp.services import Services

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-secret"
CHEAP = {"CHATS_PASSWORD_HASH_PROFILE": "cheapest"}


@pytest.fixture
def unreachable_url() -> str:
    """A server nobody runs: a loopback port nothing listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://chats:{PASSWORD}@127.0.0.1:{port}/chatsdb"


def run_console(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The run command's check before serving (``scripts/run``), as a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "backend.accounts.console"],
        env={**os.environ, **CHEAP, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def refused_naming_the_server(text: str) -> bool:
    return "storage unavailable" in text and "chatsdb" in text and "127.0.0.1" in text


def test_the_run_command_refuses_an_unreachable_server_before_serving(
    tmp_path, unreachable_url
) -> None:
    done = run_console({"CHATS_STORAGE": unreachable_url, "CHATS_DATA_DIR": str(tmp_path)})
    assert done.returncode == 1
    assert done.stderr.startswith("Chats will not start: ")
    assert refused_naming_the_server(done.stderr) and PASSWORD not in done.stderr
    assert done.stdout == ""  # no host printed: the run command stops here
    assert list(tmp_path.iterdir()) == []  # nothing written into the data folder


def test_the_app_refuses_an_unreachable_server_at_start(tmp_path, unreachable_url) -> None:
    settings = Settings.from_env(
        {"CHATS_STORAGE": unreachable_url, "CHATS_DATA_DIR": str(tmp_path)}
    )
    with pytest.raises(StorageUnavailableError) as refused:
        Services(settings)
    assert refused_naming_the_server(str(refused.value)) and PASSWORD not in str(refused.value)


def test_the_chats_command_refuses_an_unreachable_server(tmp_path, unreachable_url) -> None:
    runner = CliRunner(env={"CHATS_STORAGE": unreachable_url})
    result = runner.invoke(cli, ["--data-dir", str(tmp_path), "list", "--user", "ada"])
    assert result.exit_code == 1
    assert refused_naming_the_server(result.output) and PASSWORD not in result.output


def test_the_run_command_starts_on_postgresql_and_writes_only_the_setup_code(
    tmp_path, postgres_url
) -> None:
    done = run_console({"CHATS_STORAGE": postgres_url, "CHATS_DATA_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0.0.0.0" and "setup code" in done.stderr
    # The one-time code's hash is in PostgreSQL; the plain code is this console's own copy.
    assert [path.name for path in tmp_path.iterdir()] == [SETUP_CODE_FILE]


def test_the_chats_command_names_the_same_people_and_chats_from_any_data_folder(
    tmp_path, postgres_url, monkeypatch
) -> None:
    monkeypatch.setenv("CHATS_STORAGE", postgres_url)
    runner = CliRunner(env={"CHATS_STORAGE": postgres_url, **CHEAP})
    here, there = tmp_path / "node-a", tmp_path / "node-b"
    added = runner.invoke(
        cli,
        ["--data-dir", str(here), "users", "add", "ada", "--password-stdin"],
        input="correct horse battery staple\n",
    )
    assert added.exit_code == 0, added.output
    settings = Settings.from_env({"CHATS_STORAGE": postgres_url, "CHATS_DATA_DIR": str(here)})
    app = Services(settings)
    user = app.accounts().user_by_username("ada")
    assert user is not None
    app.directory(user.id).create_chat(title="Written on node A")
    listed = runner.invoke(cli, ["--data-dir", str(there), "list", "--user", "ada"])
    assert listed.exit_code == 0, listed.output
    assert "Written on node A" in listed.output
    repaired = runner.invoke(cli, ["--data-dir", str(there), "repair"])
    assert repaired.exit_code == 0 and repaired.output.startswith(f"{user.id}: 1 chats checked")
    assert app.directory(user.id).layout.folder == POSTGRES_ROOT / user.id
    asyncio.run(app.aclose())
    assert list(there.rglob("*")) == []  # the command kept nothing in its data folder
