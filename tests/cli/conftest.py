"""Fixtures for the CLI tests: Click's runner with a data folder and cheap argon2."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from backend.accounts import Accounts
from backend.cli import cli
from backend.config import Settings

PASSWORD = "correct horse battery staple"


class Chats:
    """Runs ``chats ...`` in-process against one data folder."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.runner = CliRunner(
            env={
                "CHATS_DATA_DIR": str(data_dir),
                "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
                # No model unless a test asks (tests/cli/test_search_meaning.py): an import
                # would otherwise embed what it imported.
                "CHATS_EMBEDDER": "off",
            }
        )

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(cli, list(args), input=input, prog_name="chats")

    def add(self, username: str, *flags: str) -> Result:
        return self("users", "add", username, "--password-stdin", *flags, input=PASSWORD + "\n")

    def accounts(self) -> Accounts:
        settings = dataclasses.replace(
            Settings.from_env({"CHATS_PASSWORD_HASH_PROFILE": "cheapest"}),
            data_dir=self.data_dir,
        )
        return Accounts(settings)


@pytest.fixture
def chats(data_dir: Path) -> Iterator[Chats]:
    yield Chats(data_dir)
