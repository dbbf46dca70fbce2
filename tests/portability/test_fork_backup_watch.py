"""Fork, backup/restore while writing, and other processes' changes reaching subscribers."""

from __future__ import annotations

import subprocess
import sys
import threading

from backend.chats import ChatCreated, Chats
from backend.portability import backup_data_dir, restore_data_dir
from backend.storage import Database
from tests.conftest import ROOT


def say(message_id: str, role: str = "user") -> dict:
    return {"id": message_id, "role": role, "parts": [{"type": "text", "text": message_id}]}


class TestFork:
    def test_a_fork_holds_the_path_to_the_message_and_is_announced(self, chats):
        source = chats.create_chat("Source")
        session = chats.get_chat(source.id).session
        for message_id in ("a", "b", "c", "d"):
            session.append_message(say(message_id))
        session.append_message(say("b2"), parent_id="a")  # another branch
        events = []
        chats.subscribe(events.append)
        fork = chats.fork_chat(source.id, "c")
        assert fork.title == "Fork of Source"
        assert [m["id"] for m in chats.get_chat(fork.id).session.get_history()] == ["a", "b", "c"]
        assert [e.chat_id for e in events if isinstance(e, ChatCreated)] == [fork.id]

    def test_a_compaction_inside_the_path_is_kept_and_one_past_it_is_not(self, chats):
        source = chats.create_chat("Source")
        session = chats.get_chat(source.id).session
        for message_id in ("a", "b", "c", "d", "e"):
            session.append_message(say(message_id))
        inside = session.add_compaction("a to b", "a", "b")
        session.add_compaction("c to e", "c", "e")
        fork = chats.get_chat(chats.fork_chat(source.id, "d").id).session
        assert [c.id for c in fork.get_compactions()] == [inside.id]
        assert [m["id"] for m in fork.get_history()] == ["compaction_" + inside.id, "c", "d"]

    def test_forking_at_an_overlay_forks_at_the_last_message_it_summarises(self, chats):
        source = chats.create_chat("Source")
        session = chats.get_chat(source.id).session
        for message_id in ("a", "b", "c"):
            session.append_message(say(message_id))
        compaction = session.add_compaction("a to b", "a", "b")
        fork = chats.get_chat(chats.fork_chat(source.id, "compaction_" + compaction.id).id)
        assert [m["id"] for m in fork.session.get_history()] == ["compaction_" + compaction.id]
        assert fork.session.get_message("b") is not None

    def test_forking_at_an_unknown_message_is_a_key_error_and_creates_nothing(self, chats):
        import pytest

        source = chats.create_chat("Source")
        chats.get_chat(source.id).session.append_message(say("a"))
        with pytest.raises(KeyError):
            chats.fork_chat(source.id, "nope")
        assert [s.id for s in chats.list_chats()] == [source.id]

    def test_an_image_is_shared_by_hash_not_copied_per_message(self, chats):
        import base64

        from tests.portability.conftest import PNG

        url = "data:image/png;base64," + base64.b64encode(PNG).decode()
        image = {"type": "file", "mediaType": "image/png", "url": url}
        source = chats.create_chat("Source")
        session = chats.get_chat(source.id).session
        session.append_message({"id": "a", "role": "user", "parts": [image]})
        session.append_message({"id": "b", "role": "user", "parts": [image]})
        fork = chats.get_chat(chats.fork_chat(source.id, "b").id)
        assert fork.session.get_message("b")["parts"][0]["url"] == url
        stored = fork.database.query_one("SELECT count(*) FROM session_attachment_meta")[0]
        assert stored == 1


CHILD = """
import sys
from backend.chats import Chats
with Chats(sys.argv[1], "owner") as chats:
    chats.create_chat("From another process")
"""


class TestOtherProcesses:
    def test_a_chat_created_by_another_process_reaches_a_subscriber(self, chats, tmp_path):
        arrived = threading.Event()
        seen = []

        def listener(event):
            if isinstance(event, ChatCreated) and event.chat.title == "From another process":
                seen.append(event)
                arrived.set()

        unsubscribe = chats.subscribe(listener)
        try:
            subprocess.run(
                [sys.executable, "-c", CHILD, str(tmp_path / "data")], cwd=ROOT, check=True
            )
            assert arrived.wait(timeout=10), "the other process's chat never arrived"
        finally:
            unsubscribe()
        assert len(seen) == 1

    def test_nobody_subscribed_means_no_watcher_thread(self, chats):
        assert not chats._watcher.running
        unsubscribe = chats.subscribe(lambda event: None)
        assert chats._watcher.running
        unsubscribe()
        assert not chats._watcher.running


class TestBackup:
    def test_a_backup_taken_while_writing_restores_a_consistent_point_in_time(self, tmp_path):
        data = tmp_path / "data"
        with Chats(data, "owner") as chats:
            chat_ids = [chats.create_chat(f"chat {n}").id for n in range(3)]
            stop = threading.Event()
            written: dict[str, int] = dict.fromkeys(chat_ids, 0)

            def writer() -> None:
                while not stop.is_set():
                    for chat_id in chat_ids:
                        index = written[chat_id]
                        chats.get_chat(chat_id).session.append_message(say(f"m{index}"))
                        written[chat_id] = index + 1

            thread = threading.Thread(target=writer)
            thread.start()
            try:
                while min(written.values()) < 5:
                    stop.wait(0.01)
                report = backup_data_dir(data, tmp_path / "backup.zip")
            finally:
                stop.set()
                thread.join()
            assert report.failures == []
        restored = tmp_path / "restored"
        restore_data_dir(tmp_path / "backup.zip", restored)
        with Chats(restored, "owner") as chats:
            for chat_id in chat_ids:
                ids = [m["id"] for m in chats.get_chat(chat_id).session.get_history()]
                assert ids == [f"m{n}" for n in range(len(ids))]  # a prefix: no gap, no tear
                assert 0 < len(ids) <= written[chat_id]
        for path in restored.rglob("*.sqlite"):
            database = Database(path)
            try:
                assert database.query_one("PRAGMA integrity_check")[0] == "ok"
            finally:
                database.close()

    def test_restore_writes_into_a_live_database(self, tmp_path):
        data = tmp_path / "data"
        with Chats(data, "owner") as chats:
            chats.create_chat("Before the backup")
        backup_data_dir(data, tmp_path / "b.zip")
        with Chats(data, "owner") as live:
            live.create_chat("After the backup")
            restore_data_dir(tmp_path / "b.zip", data)
            assert [s.title for s in live.list_chats()] == ["Before the backup"]

    def test_a_file_that_is_not_a_backup_is_refused(self, tmp_path):
        import pytest

        from backend.errors import InvalidInputError

        bogus = tmp_path / "x.zip"
        bogus.write_text("nope")
        with pytest.raises(InvalidInputError):
            restore_data_dir(bogus, tmp_path / "data")
