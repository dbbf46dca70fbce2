"""Exports of shared chats (issue 28 item 3), on both engines.

The owner's export holds each message's author (``metadata.author``) and each reply's
requester (``metadata.requestedBy``) as stored, and an import keeps them. A member's export
lists the chats shared with them in the manifest, without their content.
"""

from __future__ import annotations

import json
import zipfile

import pytest

from backend.chats import Chats
from backend.config import PostgresLocation, Settings, StorageChoice
from backend.messages import Author, Message
from backend.portability import all_chat_ids, import_file, write_zip_export
from backend.runtime import ChatRuntime
from tests.portability.round_trip import export_one
from tests.runtime.helpers import events_until_done
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

PAT = Author(id="pat-7k2m9q", name="pat")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def engine(storage: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> StorageChoice:
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", value)
    return storage


async def shared_conversation(chats: Chats, tmp_path) -> str:
    """A chat where the owner and pat each asked once, and pat retried the owner's question."""
    chat_id = chats.create_chat("Trip").id
    runtime = ChatRuntime(
        Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}),
        chats,
        ScriptedModel(),
        owner_name="olivia",
    )
    try:
        first = await runtime.send_message(chat_id, "where do we start?")
        await events_until_done(runtime, chat_id, first.run_id)
        second = await runtime.send_message(chat_id, "and the kayak?", author=PAT)
        await events_until_done(runtime, chat_id, second.run_id)
        retry = await runtime.regenerate(chat_id, first.assistant_message_id, author=PAT)
        await events_until_done(runtime, chat_id, retry.run_id)
    finally:
        await runtime.aclose()
    return chat_id


def people(document: dict) -> list[tuple[str, Author | None]]:
    found = []
    for entry in document["messages"]:
        message = Message.from_stored(entry["message"])
        person = message.author if message.role == "user" else message.requested_by
        found.append((message.role, person))
    return found


OLIVIA = Author(id="owner", name="olivia")
EXPECTED = [
    ("user", OLIVIA),
    ("assistant", OLIVIA),
    ("user", PAT),
    ("assistant", PAT),
    ("assistant", PAT),  # pat's retry of olivia's question: the reply names who asked
]


async def test_the_owners_export_holds_every_author_and_an_import_keeps_them(
    chats, other, tmp_path
):
    chat_id = await shared_conversation(chats, tmp_path)
    document = export_one(chats, chat_id)
    assert people(document) == EXPECTED
    path = tmp_path / "trip.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    imported = import_file(other, path).chat_ids[0]
    assert people(export_one(other, imported)) == EXPECTED


def test_a_members_export_lists_the_shared_chats_without_their_content(chats, tmp_path):
    chats.create_chat("Mine")
    shared = [
        {
            "owner_id": "olivia-8qpqc6",
            "owner_username": "olivia",
            "chat_id": "c-trip",
            "role": "participant",
            "since": 1_700_000_000_000,
        }
    ]
    path = tmp_path / "export.zip"
    write_zip_export(chats, all_chat_ids(chats), str(path), shared_with_me=shared)
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        names = archive.namelist()
    assert manifest["shared_with_me"] == shared
    assert [entry["title"] for entry in manifest["chats"]] == ["Mine"]
    assert not any("c-trip" in name for name in names)  # listed, never exported


def test_an_export_of_someone_nothing_is_shared_with_lists_none(chats, tmp_path):
    path = tmp_path / "export.zip"
    write_zip_export(chats, all_chat_ids(chats), str(path))
    with zipfile.ZipFile(path) as archive:
        assert json.loads(archive.read("manifest.json"))["shared_with_me"] == []
