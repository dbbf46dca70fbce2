"""Fixtures for the directory tests: both engines, a controllable clock, a fresh directory.

Every test here runs once per engine (``CHATS_STORAGE`` from the ``storage`` fixture), but
those marked ``sqlite_only``: permanently the tests about SQLite files themselves, and for now
(``until=``) those that need a PostgreSQL twin another branch is writing:
:data:`PG_DIRECTORY_STORES` (shared memory, the message index and the attachment pool,
without which ``Chats`` cannot open on PostgreSQL) and :data:`PG_CONVERSATIONS` (the
``Sessions`` twin). Remove a temporary mark when its twin is on main.
"""

from __future__ import annotations

import pytest

from backend.chats import Chats
from backend.config import PostgresLocation, StorageChoice

PG_DIRECTORY_STORES = pytest.mark.sqlite_only(until="the directory stores' PostgreSQL twins")
PG_CONVERSATIONS = pytest.mark.sqlite_only(until="the conversations' PostgreSQL twin")


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
