"""``chats search`` finds by meaning on a data folder no app is running on: it computes the
missing vectors itself (progress on stderr on a long run); ``--words-only`` and
``CHATS_EMBEDDER=off`` keep to words; a bad setting is bad usage. On both engines."""

from __future__ import annotations

import json

import pytest

from backend.chats import Chats as Directory
from backend.cli import meaning as meaning_command
from backend.config import PostgresLocation, StorageChoice, storage_root


@pytest.fixture(autouse=True)
def bundled_model(chats, storage: StorageChoice, monkeypatch: pytest.MonkeyPatch):
    """The real model, on each engine."""
    chats.runner.env["CHATS_EMBEDDER"] = "bundled"
    if isinstance(storage, PostgresLocation):
        # There the command asks the accounts who ``--user`` is; ``none``: nobody signs in.
        chats.runner.env["CHATS_AUTH"] = "none"
    monkeypatch.setenv(
        "CHATS_STORAGE", storage.url if isinstance(storage, PostgresLocation) else storage
    )


@pytest.fixture
def seed(storage: StorageChoice):
    """``seed(data_dir, texts)``: one chat per text in ``local``'s directory, where the
    command finds it (under the data folder, or PostgreSQL's fixed root); their ids."""

    def write(data_dir, texts):
        return _seed(storage_root(data_dir, storage), texts)

    return write


def _seed(root, texts):
    with Directory(root, "local") as directory:
        ids = []
        for number, text in enumerate(texts):
            chat = directory.get_chat(directory.create_chat(f"chat {number}").id)
            chat.session.append_message(
                {"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}
            )
            ids.append(chat.id)
        return ids


def found(result):
    assert result.exit_code == 0, result.output
    return [hit["chat_id"] for hit in json.loads(result.stdout)]


def test_a_paraphrase_is_found_without_the_app(chats, data_dir, seed):
    dog, _ = seed(data_dir, ["my dog is broken, how can I repair it", "painting the roof blue"])
    assert found(chats("search", "--user", "local", "fixing a damaged puppy", "--json")) == [dog]
    words = chats("search", "--user", "local", "fixing a damaged puppy", "--json", "--words-only")
    assert found(words) == []


def test_the_embedder_can_be_turned_off_and_a_bad_setting_is_bad_usage(chats, data_dir, seed):
    seed(data_dir, ["my dog is broken, how can I repair it"])
    chats.runner.env["CHATS_EMBEDDER"] = "off"
    assert found(chats("search", "--user", "local", "fixing a damaged puppy", "--json")) == []
    chats.runner.env["CHATS_EMBEDDER"] = "gpt"
    result = chats("search", "--user", "local", "puppy")
    assert result.exit_code == 2
    assert "CHATS_EMBEDDER" in result.output


def test_a_long_catch_up_shows_progress_on_stderr(chats, data_dir, monkeypatch, seed):
    monkeypatch.setattr(meaning_command, "PROGRESS_FROM", 4)
    seed(data_dir, [f"note number {n} about gardening" for n in range(6)])
    result = chats("search", "--user", "local", "flowers", "--json")
    assert result.exit_code == 0, result.output
    assert "embedding messages: 6/6" in result.stderr
    assert json.loads(result.stdout)  # stdout stays the JSON array
