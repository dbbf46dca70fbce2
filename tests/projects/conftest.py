"""Fixtures for the projects tests: both engines, a directory of ``alice`` and her projects."""

from __future__ import annotations

import itertools

import pytest

from backend.chats import Chats
from backend.config import PostgresLocation, StorageChoice
from backend.projects import Projects
from tests.support.fixtures import anyio_backend

__all__ = ["anyio_backend"]


@pytest.fixture(autouse=True)
def projects_storage(storage: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> StorageChoice:
    """``CHATS_STORAGE`` for every directory the test opens."""
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", value)
    return storage


@pytest.fixture
def chats(tmp_path):
    directory = Chats(tmp_path / "data", "alice", soft_delete_window_s=3600)
    yield directory
    directory.close()


@pytest.fixture
def projects(chats) -> Projects:
    """Alice's projects, on a clock that moves 1 ms per reading (creation order is list order)."""
    ticks = itertools.count(1_700_000_000_000)
    return Projects(chats, clock=lambda: next(ticks))
