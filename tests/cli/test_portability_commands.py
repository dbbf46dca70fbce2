"""``chats list|search|export|import|backup|restore|repair``: exit statuses and output."""

from __future__ import annotations

import json
import zipfile

from backend.chats import Chats as Directory
from tests.portability.conftest import FIXTURES


def seed(data_dir, directory_id="local"):
    with Directory(data_dir, directory_id) as directory:
        summary = directory.create_chat("Greetings")
        directory.get_chat(summary.id).session.append_message(
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello wide world"}]}
        )
        directory.flush_index()
        return summary.id


class TestListAndSearch:
    def test_list_json_is_an_array_of_chat_summaries(self, chats, data_dir):
        chat_id = seed(data_dir)
        result = chats("list", "--user", "local", "--json")
        assert result.exit_code == 0, result.output
        rows = json.loads(result.output)
        assert [(r["id"], r["title"]) for r in rows] == [(chat_id, "Greetings")]

    def test_search_finds_a_message_across_chats(self, chats, data_dir):
        chat_id = seed(data_dir)
        result = chats("search", "--user", "local", "wide world", "--json")
        assert result.exit_code == 0, result.output
        assert [(h["chat_id"], h["message_id"]) for h in json.loads(result.output)] == [
            (chat_id, "m1")
        ]

    def test_a_missing_user_option_is_bad_usage(self, chats):
        assert chats("list").exit_code == 2

    def test_an_unknown_user_is_bad_usage_once_accounts_exist(self, chats):
        chats.add("alice")
        result = chats("list", "--user", "bob")
        assert result.exit_code == 2
        assert "no such user" in result.output


class TestImport:
    def test_a_partial_import_exits_1_and_names_the_refused_conversation(self, chats, data_dir):
        result = chats("import", "--user", "local", str(FIXTURES / "chatgpt_conversations.json"))
        assert result.exit_code == 1
        assert "2 imported" in result.stdout
        assert "Broken one" in result.stderr

    def test_an_unknown_file_is_bad_usage(self, chats, tmp_path):
        path = tmp_path / "x.json"
        path.write_text("[1, 2]")
        assert chats("import", "--user", "local", str(path)).exit_code == 2

    def test_a_deeply_nested_file_is_bad_usage_with_the_reason(self, chats, tmp_path):
        # Issue 27, hole 3: 40 KB of brackets cost the reader about 1 GiB.
        path = tmp_path / "deep.json"
        path.write_bytes(b"[" * 20_000 + b"]" * 20_000)
        result = chats("import", "--user", "local", str(path))
        assert result.exit_code == 2
        assert "nested deeper than 200 levels" in result.stderr

    def test_a_clean_import_then_a_repeat_exit_0_without_duplicates(self, chats, data_dir):
        path = str(FIXTURES / "claude_conversations.json")
        assert chats("import", "--user", "local", path).exit_code == 0
        again = chats("import", "--user", "local", path)
        assert again.exit_code == 0 and "1 unchanged" in again.stdout
        assert len(json.loads(chats("list", "--user", "local", "--json").output)) == 1


class TestExport:
    def test_one_chat_as_json_on_standard_output(self, chats, data_dir):
        chat_id = seed(data_dir)
        result = chats("export", "--user", "local", chat_id)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["chat"]["id"] == chat_id

    def test_everything_as_a_zip_and_an_unknown_id_exits_1(self, chats, data_dir, tmp_path):
        chat_id = seed(data_dir)
        out = tmp_path / "all.zip"
        result = chats("export", "--user", "local", "--out", str(out), chat_id, "zzzz")
        assert result.exit_code == 1
        assert "zzzz" in result.stderr
        with zipfile.ZipFile(out) as archive:
            assert f"chats/{chat_id}.json" in archive.namelist()

    def test_markdown_of_one_chat(self, chats, data_dir, tmp_path):
        chat_id = seed(data_dir)
        out = tmp_path / "chat.md"
        result = chats(
            "export", "--user", "local", "--format", "markdown", "--out", str(out), chat_id
        )
        assert result.exit_code == 0, result.output
        assert "## User\n\nhello wide world" in out.read_text()

    def test_several_chats_without_out_is_bad_usage(self, chats, data_dir):
        seed(data_dir)
        assert chats("export", "--user", "local").exit_code == 2


class TestBackupRestoreRepair:
    def test_backup_then_restore_into_an_empty_folder(self, chats, data_dir, tmp_path):
        chat_id = seed(data_dir)
        out = tmp_path / "backup.zip"
        assert chats("backup", "--out", str(out)).exit_code == 0
        restored = tmp_path / "restored"
        result = chats("--data-dir", str(restored), "restore", str(out))
        assert result.exit_code == 0, result.output
        with Directory(restored, "local") as directory:
            assert [s.id for s in directory.list_chats()] == [chat_id]

    def test_restore_of_a_file_that_is_no_backup_is_bad_usage(self, chats, tmp_path):
        bogus = tmp_path / "bogus.zip"
        bogus.write_text("not a zip")
        assert chats("restore", str(bogus)).exit_code == 2

    def test_repair_reports_each_directory(self, chats, data_dir):
        seed(data_dir)
        result = chats("repair")
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("local: 1 chats checked")


class TestPins:
    def test_pin_and_unpin_show_in_list(self, chats, data_dir):
        chat_id = seed(data_dir)
        result = chats("pin", "--user", "local", chat_id)
        assert result.exit_code == 0, result.output
        assert result.output == f"{chat_id}\tpinned\n"
        assert chats("list", "--user", "local").output.rstrip("\n").endswith("\tpinned")
        rows = json.loads(chats("list", "--user", "local", "--json").output)
        assert rows[0]["pinned_at"] is not None
        assert chats("unpin", "--user", "local", chat_id).output == f"{chat_id}\tnot pinned\n"
        with Directory(data_dir, "local") as directory:
            assert directory.pins.pinned() == []

    def test_an_unknown_chat_is_named_and_the_others_still_pin(self, chats, data_dir):
        chat_id = seed(data_dir)
        with Directory(data_dir, "local") as directory:
            gone = directory.create_chat().id
            directory.delete_chat(gone)
        result = chats("pin", "--user", "local", gone, chat_id)
        assert result.exit_code == 1
        assert gone in result.stderr
        with Directory(data_dir, "local") as directory:
            assert [s.id for s in directory.pins.pinned()] == [chat_id]
