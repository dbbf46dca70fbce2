"""Archive travels with a chat: "export everything" includes archived chats, and an import
archives the chat its export says was archived (at the same time, so the round trip holds)."""

from __future__ import annotations

import json

from backend.portability import all_chat_ids, import_file
from tests.portability.round_trip import export_one, normalise, rich_chat


class TestArchiveRoundTrip:
    def test_every_chat_id_includes_archived_chats_newest_first(self, chats):
        ids = [chats.create_chat(f"chat {n}").id for n in range(5)]
        for chat_id in ids[1::2]:
            chats.archive_chat(chat_id)
        assert set(all_chat_ids(chats, page=2)) == set(ids)
        cursors = [chats.get_summary(i).cursor for i in all_chat_ids(chats, page=2)]
        assert cursors == sorted(cursors, reverse=True)

    def test_an_archived_chat_imports_archived_and_exports_the_same(self, chats, other, tmp_path):
        chat_id = rich_chat(chats)
        archived_at = chats.archive_chat(chat_id).archived_at
        first = export_one(chats, chat_id)
        assert first["chat"]["archived_at"] == first["conversation"]["archived_at"] == archived_at
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(first))
        (imported,) = import_file(other, path).chat_ids
        assert other.get_summary(imported).archived_at == archived_at
        assert other.list_chats() == []
        assert normalise(export_one(other, imported)) == normalise(first)

    def test_an_export_that_kept_archive_in_the_record_only_imports_archived(
        self, chats, other, tmp_path
    ):
        document = export_one(chats, rich_chat(chats))
        document["chat"].pop("archived_at")
        document["conversation"]["archived_at"] = 1_234
        path = tmp_path / "old.json"
        path.write_text(json.dumps(document))
        (imported,) = import_file(other, path).chat_ids
        assert other.get_summary(imported).archived_at == 1_234
