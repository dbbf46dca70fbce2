"""Imports of other systems' exports: trees kept whole, typed records, one chat per source."""

from __future__ import annotations

import json
import shutil

from backend.portability import import_file
from backend.sessions import Sessions
from tests.portability.conftest import FIXTURES, PNG, chat_titled, visible


class TestChatGPTExport:
    def test_current_node_is_the_visible_leaf_and_every_branch_is_kept(self, chats, chatgpt_zip):
        report = import_file(chats, chatgpt_zip)
        assert report.format == "chatgpt"
        assert [m["id"] for m in visible(chats, "Plotting sine waves")] == [
            "n-ctx",
            "n-u1b",
            "n-think",
            "n-code",
            "n-tool",
            "n-a2",
        ]
        chat = chat_titled(chats, "Plotting sine waves")
        edits = chat.session.get_branches("n-ctx")
        assert [m["id"] for m in edits] == ["n-u1", "n-u1b"]  # the edited message: siblings
        assert [m["id"] for m in chat.session.get_branches("n-u1")] == ["n-a1"]

    def test_empty_nodes_are_skipped_without_breaking_the_tree(self, chats, chatgpt_zip):
        import_file(chats, chatgpt_zip)
        chat = chat_titled(chats, "Plotting sine waves")
        assert chat.session.get_message("n-sys") is None  # blank hidden system root
        assert chat.session.get_message("n-blank") is None  # blank assistant placeholder
        assert [m["id"] for m in chat.session.get_branches("n-tool")] == ["n-a2"]

    def test_hidden_tool_code_and_reasoning_messages_are_typed_records(self, chats, chatgpt_zip):
        import_file(chats, chatgpt_zip)
        by_id = {m["id"]: m for m in visible(chats, "Plotting sine waves")}
        assert by_id["n-ctx"]["role"] == "system"
        assert by_id["n-ctx"]["metadata"]["hidden"] is True
        assert by_id["n-think"]["parts"][0]["type"] == "reasoning"
        assert by_id["n-code"]["parts"][0]["text"].startswith("```python\nimport numpy")
        tool = by_id["n-tool"]["parts"][0]
        assert (tool["type"], tool["toolName"], tool["output"]) == ("dynamic-tool", "python", "0.0")
        assert by_id["n-tool"]["metadata"]["kind"] == "tool"

    def test_models_and_times_are_kept_per_message(self, chats, chatgpt_zip):
        import_file(chats, chatgpt_zip)
        chat = chat_titled(chats, "Plotting sine waves")
        assert chat.session.get_message("n-a1")["metadata"]["model"] == "gpt-4"
        assert chat.session.get_message("n-a2")["metadata"]["model"] == "o3"
        stats = {s.id: s.created_at for s in chat.session.get_history_row_stats()}
        assert stats["n-u1b"] == 1_700_000_100_000
        summary = chats.get_summary(chat.id)
        assert (summary.created_at, summary.updated_at) == (1_700_000_000_500, 1_700_000_600_250)

    def test_an_image_in_the_zip_becomes_an_attachment(self, chats, chatgpt_zip):
        import_file(chats, chatgpt_zip)
        part = chat_titled(chats, "Plotting sine waves").session.get_message("n-u1b")["parts"][0]
        assert part["type"] == "file" and part["mediaType"] == "image/png"
        assert part["url"].endswith(
            ",iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        )
        assert PNG

    def test_an_image_missing_from_a_bare_conversations_json_is_named(self, chats):
        import_file(chats, FIXTURES / "chatgpt_conversations.json")
        part = chat_titled(chats, "Plotting sine waves").session.get_message("n-u1b")["parts"][0]
        assert part == {"type": "text", "text": "[image file-Plot123 is not in this export]"}

    def test_one_bad_conversation_is_reported_and_the_rest_import(self, chats, chatgpt_zip):
        report = import_file(chats, chatgpt_zip)
        assert (report.imported, len(report.failures)) == (2, 1)
        assert "Broken one" in report.failures[0].item
        assert {s.title for s in chats.list_chats()} == {"Plotting sine waves", "Short chat"}

    def test_split_conversation_files_of_newer_exports_are_all_read(self, chats, tmp_path):
        import zipfile

        records = json.loads((FIXTURES / "chatgpt_conversations.json").read_text())
        path = tmp_path / "split.zip"
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("conversations-000.json", json.dumps(records[:1]))
            archive.writestr("conversations-001.json", json.dumps(records[2:]))
        report = import_file(chats, path)
        assert report.imported == 2 and report.ok


class TestReimport:
    def test_importing_the_same_file_twice_creates_no_duplicates(self, chats, chatgpt_zip):
        import_file(chats, chatgpt_zip)
        again = import_file(chats, chatgpt_zip)
        assert (again.imported, again.unchanged) == (0, 2)
        assert len(chats.list_chats()) == 2

    def test_a_reimport_with_new_messages_adds_them_to_the_same_chat(self, chats, tmp_path):
        records = json.loads((FIXTURES / "chatgpt_conversations.json").read_text())
        short = records[2]
        first = tmp_path / "first.json"
        first.write_text(json.dumps([short]))
        import_file(chats, first)
        short["mapping"]["s-a"]["children"] = ["s-u2"]
        short["mapping"]["s-u2"] = {
            "id": "s-u2",
            "parent": "s-a",
            "children": [],
            "message": {
                "id": "s-u2",
                "author": {"role": "user"},
                "create_time": 1700002100.0,
                "content": {"content_type": "text", "parts": ["One more thing"]},
            },
        }
        short["current_node"] = "s-u2"
        second = tmp_path / "second.json"
        second.write_text(json.dumps([short]))
        report = import_file(chats, second)
        assert (report.imported, report.updated) == (0, 1)
        assert len(chats.list_chats()) == 1
        assert [m["id"] for m in visible(chats, "Short chat")] == ["s-u", "s-a", "s-u2"]

    def test_a_deleted_imported_chat_comes_back_on_reimport(self, chats, chatgpt_zip):
        import_file(chats, chatgpt_zip)
        chats.delete_chat(chat_titled(chats, "Short chat").id)
        report = import_file(chats, chatgpt_zip)
        assert report.imported == 1
        assert len(chats.list_chats()) == 2


class TestClaudeExport:
    def test_parent_links_make_a_tree_with_the_current_leaf_visible(self, chats):
        report = import_file(chats, FIXTURES / "claude_conversations.json")
        assert report.format == "claude" and report.imported == 1
        assert [m["id"] for m in visible(chats, "Trip planning")] == [
            "c-u1",
            "c-a1",
            "c-u2b",
            "c-a2b",
        ]
        chat = chat_titled(chats, "Trip planning")
        assert [m["id"] for m in chat.session.get_branches("c-a1")] == ["c-u2", "c-u2b"]

    def test_thinking_and_tool_blocks_are_typed_parts(self, chats):
        import_file(chats, FIXTURES / "claude_conversations.json")
        parts = chat_titled(chats, "Trip planning").session.get_message("c-a1")["parts"]
        assert [p["type"] for p in parts] == ["reasoning", "dynamic-tool", "dynamic-tool", "text"]
        assert parts[2]["output"] == "Belem Tower; Alfama"

    def test_attached_text_is_kept_and_a_file_without_bytes_is_named(self, chats):
        import_file(chats, FIXTURES / "claude_conversations.json")
        chat = chat_titled(chats, "Trip planning")
        assert "Bring umbrella" in chat.session.get_message("c-u2")["parts"][1]["text"]
        assert "map.png" in chat.session.get_message("c-u1")["parts"][1]["text"]


class TestOpenWebUIExport:
    def test_history_tree_current_id_models_and_images(self, chats):
        report = import_file(chats, FIXTURES / "openwebui_export.json")
        assert report.format == "openwebui" and report.imported == 1
        messages = visible(chats, "Regex help")
        assert [m["id"] for m in messages] == ["o-u1", "o-a1b"]
        assert messages[1]["metadata"]["model"] == "mistral:7b"
        assert messages[0]["parts"][0]["type"] == "file"
        chat = chat_titled(chats, "Regex help")
        assert [m["id"] for m in chat.session.get_branches("o-u1")] == ["o-a1", "o-a1b"]
        with Sessions(chat.sessions.database) as raw:  # the image is stored once, by hash
            assert raw.session().get_message("o-u1")["parts"][0]["url"].startswith("data:image/png")

    def test_an_edited_first_message_is_a_sibling_root_and_tool_calls_stay_readable(self, chats):
        import_file(chats, FIXTURES / "openwebui_export.json")
        chat = chat_titled(chats, "Regex help")
        assert [m["id"] for m in chat.session.get_branches(None)] == ["o-u1", "o-u1b"]
        text = chat.session.get_message("o-a2")["parts"][0]["text"]
        assert 'name="regex_test"' in text and "matched 3 of 4" in text


class TestDetection:
    def test_the_format_is_detected_from_content_not_the_file_name(self, chats, tmp_path):
        disguised = tmp_path / "export.txt"
        shutil.copy(FIXTURES / "claude_conversations.json", disguised)
        assert import_file(chats, disguised).format == "claude"

    def test_an_unknown_file_is_refused_with_a_clear_error(self, chats, tmp_path):
        import pytest

        from backend.errors import InvalidInputError

        path = tmp_path / "x.json"
        path.write_text('{"hello": "world"}')
        with pytest.raises(InvalidInputError, match="not a known export"):
            import_file(chats, path)
