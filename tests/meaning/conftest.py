"""Fixtures for the tests of search by meaning that keep vectors: both engines."""

from __future__ import annotations

import pytest

from backend.config import PostgresLocation, StorageChoice


@pytest.fixture
def on_engine(storage: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> StorageChoice:
    """``CHATS_STORAGE`` for every directory and command of the test, once per engine (a
    module asks with ``pytest.mark.usefixtures("on_engine")``; the model's own tests need no
    storage and run once)."""
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", value)
    return storage
