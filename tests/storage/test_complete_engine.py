"""Neither the app nor the ``chats`` command runs with half an installation on another engine:
while PostgreSQL does not hold chats and conversations, ``CHATS_STORAGE=postgresql://…`` is
refused at start with a sentence that names the server and never its password."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from backend.cli import cli
from backend.config import Settings
from backend.errors import ConfigurationError
from backend.storage.engines import check_complete_engine

URL = "postgresql://chats:hunter2-secret@db.example:5432/chatsdb"
ROOT = Path(__file__).resolve().parents[2]


def test_the_embedded_engine_is_complete(tmp_path) -> None:
    check_complete_engine(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))


def test_postgresql_is_refused_naming_the_server_not_the_password(tmp_path) -> None:
    settings = Settings.from_env({"CHATS_STORAGE": URL, "CHATS_DATA_DIR": str(tmp_path)})
    with pytest.raises(ConfigurationError) as refused:
        check_complete_engine(settings)
    assert "db.example" in str(refused.value) and "chatsdb" in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_the_chats_command_refuses_it_with_a_usage_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CHATS_STORAGE", URL)
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "list", "--user", "ada"])
    assert result.exit_code == 2
    assert "does not hold chats" in result.output and "hunter2" not in result.output


def test_the_run_command_refuses_it_before_serving(tmp_path) -> None:
    env = {**os.environ, "CHATS_STORAGE": URL, "CHATS_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "backend.accounts.console"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "Chats will not start" in done.stderr and "hunter2" not in done.stderr
    assert done.stdout == ""  # no host printed: the run command stops here
    assert list(tmp_path.iterdir()) == []  # nothing written into the data folder
