"""Fixtures for the directory tests: both engines, a controllable clock, a fresh directory.

Every test here runs once per engine (``CHATS_STORAGE`` from the ``storage`` fixture), but
those marked ``sqlite_only``: the tests about SQLite files themselves (file layout, open
descriptors, SQLite's heap, migrations of an old ``directory.sqlite``).
"""

from __future__ import annotations

import pytest

from backend.chats import Chats
from backend.config import PostgresLocation, StorageChoice


@pytest.fixture(autouse=True)
def chats_storage(storage: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> StorageChoice:
    """``CHATS_STORAGE`` for every directory the test opens."""
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", value)
    return storage


START_MS = 1_700_000_000_000


class FakeClock:
    """Milliseconds that only move when a test says so (timestamps can tie on purpose)."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int = 1) -> int:
        self.now += ms
        return self.now


def text_message(message_id: str, text: str, role: str = "user") -> dict:
    return {"id": message_id, "role": role, "parts": [{"type": "text", "text": text}]}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def chats(tmp_path, clock):
    directory = Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=3600)
    yield directory
    directory.close()


@pytest.fixture
def events(chats):
    """Every directory event of ``chats``, in order."""
    seen = []
    chats.subscribe(seen.append)
    return seen
