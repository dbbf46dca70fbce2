"""Fixtures for the sharing tests: real accounts (owner, two people, a disabled one), a
controllable clock, and a fresh sharing database per test.

Every test with a database runs on both storage engines (``settings`` asks for ``storage``);
the pure table tests run once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.accounts import CONSOLE_ACTOR, Accounts, User
from backend.config import Settings, StorageChoice
from backend.sharing import ChatRef, Sharing, SnapshotMessage
from tests.accounts.conftest import PASSWORD, FakeClock


@pytest.fixture
def settings(tmp_path: Path, storage: StorageChoice) -> Settings:
    base = Settings.from_env({"CHATS_PASSWORD_HASH_PROFILE": "cheapest"})
    return dataclasses.replace(base, data_dir=tmp_path / "data", storage=storage)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def accounts(settings: Settings, clock: FakeClock) -> Iterator[Accounts]:
    with Accounts(settings, clock=clock) as opened:
        yield opened


@pytest.fixture
def sharing(settings: Settings, accounts: Accounts, clock: FakeClock) -> Iterator[Sharing]:
    with Sharing(settings, accounts, clock=clock) as opened:
        yield opened


@pytest.fixture
def admin(accounts: Accounts) -> User:
    return accounts.create_user(CONSOLE_ACTOR, "root-admin", PASSWORD, role="admin")


def _person(accounts: Accounts, admin: User, name: str) -> User:
    return accounts.create_user(admin.id, name, PASSWORD)


@pytest.fixture
def owner(accounts: Accounts, admin: User) -> User:
    return _person(accounts, admin, "olivia")


@pytest.fixture
def pat(accounts: Accounts, admin: User) -> User:
    """Becomes a participant in most tests."""
    return _person(accounts, admin, "pat")


@pytest.fixture
def vic(accounts: Accounts, admin: User) -> User:
    """Becomes a viewer in most tests."""
    return _person(accounts, admin, "vic")


@pytest.fixture
def stranger(accounts: Accounts, admin: User) -> User:
    """An account that nobody shares anything with."""
    return _person(accounts, admin, "sam")


@pytest.fixture
def disabled(accounts: Accounts, admin: User) -> User:
    user = _person(accounts, admin, "dora")
    return accounts.disable_user(admin.id, user.id)


@pytest.fixture
def chat(owner: User) -> ChatRef:
    return ChatRef(owner_id=owner.id, chat_id="kayak-trip")


@pytest.fixture
def shared(sharing: Sharing, owner: User, pat: User, vic: User, chat: ChatRef) -> ChatRef:
    """``chat`` shared with pat as participant and vic as viewer."""
    sharing.share(owner, chat, "pat", "participant")
    sharing.share(owner, chat, "vic", "viewer")
    return chat


def message(text: str, *, author: str = "olivia", role: str = "user") -> SnapshotMessage:
    return SnapshotMessage(author=author, role=role, text=text, created_at=1)  # type: ignore[arg-type]
