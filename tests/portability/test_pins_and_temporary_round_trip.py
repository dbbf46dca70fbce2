"""Pins travel with a chat (export, import, backup); a temporary chat never leaves the app."""

from __future__ import annotations

import io
import json

import pytest

from backend.chats import Chats
from backend.errors import InvalidInputError
from backend.portability import (
    all_chat_ids,
    backup_data_dir,
    import_file,
    restore_data_dir,
    write_chat,
)
from tests.portability.round_trip import export_one, normalise, rich_chat


def test_a_pinned_chat_imports_pinned_and_exports_the_same(chats, other, tmp_path):
    chat_id = rich_chat(chats)
    pinned_at = chats.pins.pin(chat_id).pinned_at
    first = export_one(chats, chat_id)
    assert first["chat"]["pinned_at"] == pinned_at
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(first))
    (imported,) = import_file(other, path).chat_ids
    assert [s.id for s in other.pins.pinned()] == [imported]
    assert other.get_summary(imported).pinned_at == pinned_at
    assert normalise(export_one(other, imported)) == normalise(first)


def test_a_backup_keeps_pins(chats, tmp_path):
    chat_id = chats.create_chat("pinned").id
    chats.pins.pin(chat_id)
    backup_data_dir(chats.layout.root, tmp_path / "backup.zip")
    restore_data_dir(tmp_path / "backup.zip", tmp_path / "restored")
    with Chats(tmp_path / "restored", chats.directory_id) as restored:
        assert [s.id for s in restored.pins.pinned()] == [chat_id]


def test_a_temporary_chat_is_left_out_of_every_export_and_refused_by_id(chats):
    kept = chats.create_chat("kept").id
    temporary = chats.temporary.start().id
    assert all_chat_ids(chats) == [kept]
    with pytest.raises(InvalidInputError, match="temporary"):
        write_chat(chats, temporary, io.StringIO())
