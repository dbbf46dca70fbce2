"""Fixtures for the accounts tests: cheap argon2 parameters, a controllable clock, a fresh
accounts database per test, and an admin to act with.

Every test with a data folder runs on both storage engines (``data_dir`` asks for
``storage``): ``make_settings`` gives the engine of the test being run, so tests that build
their own settings follow it too. Pure tests (names, password rules) run once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.accounts import CONSOLE_ACTOR, Accounts, User
from backend.config import Settings, StorageChoice
from tests.support import storage_engines

START_MS = 1_800_000_000_000
PASSWORD = "correct horse battery staple"
ADDRESS = "192.0.2.10"


class FakeClock:
    """Milliseconds that only move when a test says so."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance_s(self, seconds: float) -> int:
        self.now += int(seconds * 1000)
        return self.now


_engine: list[StorageChoice] = ["sqlite"]  # the engine of the test being run


@pytest.fixture
def data_dir(tmp_path: Path, storage: StorageChoice) -> Iterator[Path]:
    path = tmp_path / "data"
    path.mkdir()
    _engine[0] = storage
    yield path
    _engine[0] = "sqlite"


def make_settings(data_dir: Path, **changes: object) -> Settings:
    base = Settings.from_env({"CHATS_PASSWORD_HASH_PROFILE": "cheapest"})
    changes.setdefault("storage", _engine[0])
    return dataclasses.replace(base, data_dir=data_dir, **changes)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return make_settings(data_dir)


@pytest.fixture
def accounts(settings: Settings, clock: FakeClock) -> Iterator[Accounts]:
    with Accounts(settings, clock=clock) as opened:
        yield opened


@pytest.fixture
def admin(accounts: Accounts) -> User:
    return accounts.create_user(CONSOLE_ACTOR, "root-admin", PASSWORD, role="admin")


@pytest.fixture
def alice(accounts: Accounts, admin: User) -> User:
    return accounts.create_user(admin.id, "alice", PASSWORD)


def raw_rows(accounts: Accounts, sql: str) -> list[tuple]:
    """Run ``sql`` on the accounts database through a connection of its own, as an attacker
    with the file (or the database) would."""
    return storage_engines.raw_rows(accounts.settings.storage, accounts.path, sql)


@pytest.fixture
def hashes(accounts: Accounts, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every password ``accounts`` hashes from now on (argon2 is the cost a post can force)."""
    made: list[str] = []
    passwords = accounts._passwords
    real_hash = passwords.hash

    def counting_hash(password: str) -> str:
        made.append(password)
        return real_hash(password)

    monkeypatch.setattr(passwords, "hash", counting_hash)
    return made
