"""Fork, backup/restore while writing, and other processes' changes reaching subscribers."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats import ChatCreated, Chats, ChatSummary
from backend.errors import InvalidInputError
from backend.portability import backup_data_dir, import_file, restore_data_dir, write_zip_export
from backend.storage import Database
from tests.conftest import ROOT
from tests.portability.conftest import PNG
from tests.support.deadlines import WAIT_S


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

    @pytest.mark.parametrize("at", [["a"], {"id": "a"}, 7, None, ""])
    def test_forking_at_what_is_no_message_id_is_invalid_input_and_creates_nothing(self, chats, at):
        source = chats.create_chat("Source")
        chats.get_chat(source.id).session.append_message(say("a"))
        with pytest.raises(InvalidInputError):  # a ValueError: the fork control's refusal
            chats.fork_chat(source.id, at)
        assert [s.id for s in chats.list_chats()] == [source.id]


def image_part(data: bytes) -> dict:
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    return {"type": "file", "mediaType": "image/png", "url": url}


def pooled(chats: Chats) -> int:
    return chats.database.query_one("SELECT count(*) FROM pool_attachments")[0]


def file_payloads(chat) -> int:  # type: ignore[no-untyped-def]
    return chat.database.query_one("SELECT count(*) FROM session_attachment_meta")[0]


def chat_with_image(chats: Chats) -> ChatSummary:
    """A chat whose one message ``a`` carries the PNG."""
    source = chats.create_chat("Source")
    message = {"id": "a", "role": "user", "parts": [image_part(PNG)]}
    chats.get_chat(source.id).session.append_message(message)
    return source


def file_bytes(chat) -> int:  # type: ignore[no-untyped-def]
    """The chat file's size once its write-ahead log is folded in."""
    chat.database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return Path(chat.database.path).stat().st_size


@pytest.fixture
def purging(tmp_path: Path) -> Iterator[Chats]:
    """A directory that purges a deleted chat's file at the next sweep."""
    with Chats(tmp_path / "purging", "owner", soft_delete_window_s=0) as directory:
        yield directory


class TestForkSharesAttachmentsByHash:
    def test_the_fork_file_holds_no_bytes_of_the_image_yet_shows_it(self, purging):
        big = os.urandom(300_000)
        source = purging.create_chat("Source")
        session = purging.get_chat(source.id).session
        session.append_message({"id": "a", "role": "user", "parts": [image_part(big)]})
        session.append_message({"id": "b", "role": "user", "parts": [image_part(big)]})
        fork = purging.get_chat(purging.fork_chat(source.id, "b").id)
        assert file_payloads(fork) == 0
        assert file_bytes(fork) < 100_000 < 300_000 < file_bytes(purging.get_chat(source.id))
        url = image_part(big)["url"]
        assert [m["parts"][0]["url"] for m in fork.session.get_history()] == [url, url]
        assert purging.get_chat(source.id).session.get_message("a")["parts"][0]["url"] == url
        assert pooled(purging) == 1

    def test_purging_the_source_keeps_the_forks_image(self, purging):
        source = chat_with_image(purging)
        fork_id = purging.fork_chat(source.id, "a").id
        purging.delete_chat(source.id)
        purging.sweep()
        assert purging.get_chat(fork_id).session.get_message("a") is not None
        url = purging.get_chat(fork_id).session.get_message("a")["parts"][0]["url"]
        assert url == image_part(PNG)["url"]

    def test_forks_of_forks_store_the_image_once_and_keep_it_while_one_of_them_lives(self, purging):
        source = chat_with_image(purging)
        first = purging.fork_chat(source.id, "a").id
        second = purging.fork_chat(first, "a").id
        assert pooled(purging) == 1
        for chat_id in (source.id, first):
            purging.delete_chat(chat_id)
        purging.sweep()
        url = purging.get_chat(second).session.get_message("a")["parts"][0]["url"]
        assert url == image_part(PNG)["url"]
        assert pooled(purging) == 1

    def test_purging_the_last_chat_that_reads_a_pooled_image_removes_it(self, purging):
        source = chat_with_image(purging)
        fork_id = purging.fork_chat(source.id, "a").id
        purging.delete_chat(fork_id)
        purging.sweep()
        assert pooled(purging) == 0
        url = purging.get_chat(source.id).session.get_message("a")["parts"][0]["url"]
        assert url == image_part(PNG)["url"]  # the source's own copy was never the pool's

    def test_an_exported_fork_imports_elsewhere_with_its_image(self, chats, tmp_path):
        source = chat_with_image(chats)
        fork_id = chats.fork_chat(source.id, "a").id
        exported = tmp_path / "fork.zip"
        write_zip_export(chats, [fork_id], str(exported))
        with Chats(tmp_path / "elsewhere", "owner") as elsewhere:
            report = import_file(elsewhere, exported)
            assert report.imported == 1, report.summary()
            imported = elsewhere.get_chat(report.chat_ids[0])
            url = imported.session.get_message("a")["parts"][0]["url"]
            assert url == image_part(PNG)["url"]
            assert file_payloads(imported) == 1  # an import owns its bytes again

    def test_a_backup_restores_a_fork_with_its_pooled_image(self, chats, tmp_path):
        source = chat_with_image(chats)
        fork_id = chats.fork_chat(source.id, "a").id
        backup_data_dir(chats.layout.root, tmp_path / "backup.zip")
        restore_data_dir(tmp_path / "backup.zip", tmp_path / "restored")
        with Chats(tmp_path / "restored", "owner") as restored:
            url = restored.get_chat(fork_id).session.get_message("a")["parts"][0]["url"]
            assert url == image_part(PNG)["url"]


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
            assert arrived.wait(timeout=WAIT_S), "the other process's chat never arrived"
        finally:
            unsubscribe()
        assert len(seen) == 1

    def test_nobody_subscribed_means_no_watcher_thread(self, chats):
        assert not chats._watcher.running
        unsubscribe = chats.subscribe(lambda event: None)
        assert chats._watcher.running
        unsubscribe()
        assert not chats._watcher.running


class TestOneWatchThread:
    """Every watched directory of the process is polled by one thread (a thread per online
    person cost each ~27 KB of stack)."""

    def test_two_watched_directories_are_polled_by_one_thread(self, tmp_path):
        ann, bob = Chats(tmp_path, "ann"), Chats(tmp_path, "bob")
        stops = [ann.subscribe(lambda event: None), bob.subscribe(lambda event: None)]
        try:
            watching = [t for t in threading.enumerate() if t.name.startswith("chats-watch")]
            assert len(watching) == 1
        finally:
            for stop in stops:
                stop()
            ann.close()
            bob.close()

    def test_a_directory_in_a_long_transaction_does_not_hold_up_anothers_events(self, tmp_path):
        ann, bob = Chats(tmp_path, "ann"), Chats(tmp_path, "bob")
        arrived = threading.Event()

        def listener(event):
            if isinstance(event, ChatCreated) and event.chat.title == "From elsewhere":
                arrived.set()

        stops = [ann.subscribe(lambda event: None), bob.subscribe(listener)]
        try:
            with ann.database.transaction():  # ann's connection is busy until the end
                # Another connection to bob's file (as another process would be): only the
                # watcher can tell bob's listeners.
                with Chats(tmp_path, "bob") as elsewhere:
                    elsewhere.create_chat("From elsewhere")
                assert arrived.wait(timeout=WAIT_S), "bob's change waited for ann's transaction"
        finally:
            for stop in stops:
                stop()
            ann.close()
            bob.close()


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
