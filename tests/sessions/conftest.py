"""Fixtures for the conversation store: a fresh file per test, message builders, events.

Every test runs on both engines (``CHATS_STORAGE`` from the ``storage`` fixture): on
PostgreSQL the same paths name scopes, so a test reads the same either way. Tests about SQLite
files themselves are marked ``sqlite_only``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.config import StorageChoice
from backend.sessions import Session, SessionChangeEvent, Sessions
from backend.storage import Scope


@pytest.fixture(autouse=True)
def _storage_engine(storage: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the test on the engine ``storage`` names (as ``CHATS_STORAGE`` would)."""
    if storage == "sqlite":
        monkeypatch.delenv("CHATS_STORAGE", raising=False)
    else:
        monkeypatch.setenv("CHATS_STORAGE", storage.url)


def text_message(message_id: str, text: str | None = None, role: str = "user") -> dict[str, Any]:
    """A one-part UIMessage; the text defaults to something derived from the id."""
    return {
        "id": message_id,
        "role": role,
        "parts": [{"type": "text", "text": f"text of {message_id}" if text is None else text}],
    }


def raw_db(session: Session) -> Scope:
    """The database under ``session``, for a test's own SQL. On PostgreSQL the stores bind
    the scope into every statement; a test's statements need not, as its namespace holds
    the one conversation of the test."""
    db = session._db
    return getattr(db, "scope", db)


def ids(messages: list[dict[str, Any]]) -> list[str]:
    return [message["id"] for message in messages]


def append_chain(session: Session, *message_ids: str) -> None:
    for message_id in message_ids:
        session.append_message(text_message(message_id))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "conversation.sqlite"


@pytest.fixture
def sessions(db_path: Path) -> Iterator[Sessions]:
    store = Sessions(db_path)
    yield store
    store.close()


@pytest.fixture
def session(sessions: Sessions) -> Session:
    return sessions.session()


@pytest.fixture
def events(sessions: Sessions) -> list[SessionChangeEvent]:
    """Every change event of the file, in delivery order."""
    received: list[SessionChangeEvent] = []
    sessions.subscribe(received.append)
    return received
