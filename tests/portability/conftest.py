"""Fixtures for the portability tests: directories, the hand-written export fixtures."""

from __future__ import annotations

import base64
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats import Chats

FIXTURES = Path(__file__).parent / "fixtures"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture
def chats(tmp_path: Path) -> Iterator[Chats]:
    with Chats(tmp_path / "data", "owner") as directory:
        yield directory


@pytest.fixture
def other(tmp_path: Path) -> Iterator[Chats]:
    with Chats(tmp_path / "data", "other") as directory:
        yield directory


@pytest.fixture
def chatgpt_zip(tmp_path: Path) -> Path:
    """The ChatGPT fixture as the export .zip, with the image its message points at."""
    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w") as zip_file:
        zip_file.write(FIXTURES / "chatgpt_conversations.json", "conversations.json")
        zip_file.writestr("file-Plot123-sine.png", PNG)
        zip_file.writestr("chat.html", "<html></html>")
    return path


def visible(chats: Chats, title: str) -> list[dict]:
    summary = next(s for s in chats.list_chats() if s.title == title)
    return chats.get_chat(summary.id).session.get_history()


def chat_titled(chats: Chats, title: str):
    summary = next(s for s in chats.list_chats() if s.title == title)
    return chats.get_chat(summary.id)
