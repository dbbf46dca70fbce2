"""Fixtures for the conversation store: a fresh file per test, message builders, events."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.sessions import Session, SessionChangeEvent, Sessions


def text_message(message_id: str, text: str | None = None, role: str = "user") -> dict[str, Any]:
    """A one-part UIMessage; the text defaults to something derived from the id."""
    return {
        "id": message_id,
        "role": role,
        "parts": [{"type": "text", "text": f"text of {message_id}" if text is None else text}],
    }


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
