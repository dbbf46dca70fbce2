"""The message index detects and repairs lag: killed writers, foreign writers, failed flushes.

The consistency rule under test: after any mix of writes, including processes killed with
SIGKILL in the middle of them, a directory that has been reopened answers every indexed
search with exactly the hits of the fan-out over the chats' own indexes.
"""

import os
import random
import signal
import sqlite3
import subprocess
import sys

import pytest

from backend.chats import Chats
from backend.chats.index_store import MessageIndexStore
from backend.sessions import Sessions
from tests.chats.conftest import text_message
from tests.chats.crash_writer import VOCABULARY, random_writes
from tests.conftest import ROOT
from tests.support.deadlines import WAIT_S


def hit_keys(hits):
    return sorted((hit.chat_id, hit.message_id) for hit in hits)


def assert_paths_agree(chats):
    for word in VOCABULARY:
        indexed = chats.search_messages(word, limit=100_000)
        fanned = chats.search_messages_fanout(word, limit=100_000)
        assert hit_keys(indexed) == hit_keys(fanned), word


def leases(root):
    conn = sqlite3.connect(root / "alice" / "directory.sqlite")
    try:
        return conn.execute("SELECT chat_num, holder FROM index_leases").fetchall()
    finally:
        conn.close()


def indexed_count(root):
    conn = sqlite3.connect(root / "alice" / "directory.sqlite")
    try:
        return conn.execute("SELECT count(*) FROM message_docs").fetchone()[0]
    finally:
        conn.close()


def start_writer(root, seed, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "tests.chats.crash_writer", str(root), str(seed), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def kill(process):
    process.send_signal(signal.SIGKILL)
    process.wait()


class TestKilledWriter:
    def test_a_writer_killed_with_hints_pending_is_repaired_when_the_directory_opens(
        self, tmp_path
    ):
        with Chats(tmp_path, "alice") as chats:
            chats.create_chat()
        writer = start_writer(tmp_path, 10, "sleep")
        assert writer.stdout.readline().strip() == "ready"
        kill(writer)
        assert indexed_count(tmp_path) == 0  # the index lags the file...
        assert len(leases(tmp_path)) == 1  # ...and the dead writer's lease says so
        with Chats(tmp_path, "alice") as chats:
            assert len(chats.search_messages("pending", limit=100)) == 10
            assert leases(tmp_path) == []

    def test_a_live_writers_lease_is_left_alone_until_it_is_gone(self, tmp_path):
        with Chats(tmp_path, "alice") as chats:
            chats.create_chat()
        writer = start_writer(tmp_path, 5, "sleep")
        try:
            assert writer.stdout.readline().strip() == "ready"
            with Chats(tmp_path, "alice") as chats:
                assert len(leases(tmp_path)) == 1
                assert chats.repair_index().leases_released == 0
                kill(writer)
                report = chats.repair_index()
                assert (report.leases_released, report.documents_added) == (1, 5)
                assert len(chats.search_messages("pending")) == 5
        finally:
            if writer.poll() is None:
                kill(writer)

    @pytest.mark.slow
    def test_after_random_writes_and_kills_the_index_equals_the_fan_out(self, tmp_path):
        rng = random.Random(20240611)
        with Chats(tmp_path, "alice") as chats:
            for _ in range(6):
                chats.create_chat()
        survivor = Chats(tmp_path, "alice")  # a second process-like writer that stays alive
        try:
            for round_number in range(4):
                writer = start_writer(tmp_path, round_number)
                target = rng.randint(20, 400)
                for line in writer.stdout:
                    if int(line) >= target:
                        break
                kill(writer)
                random_writes(survivor, rng, 30, f"s{round_number}")
            survivor.repair_index()
            assert_paths_agree(survivor)
        finally:
            survivor.close()
        assert leases(tmp_path) == []
        with Chats(tmp_path, "alice") as chats:
            assert_paths_agree(chats)
            assert chats.repair_index(full=True).changed is False


class TestOtherLag:
    def test_writes_that_bypass_the_directory_are_caught_by_a_full_repair(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m1", "known words"))
        path = chats.layout.chat_path(chat.id, chat.generation)
        with Sessions(path) as foreign:
            foreign.session("").append_message(text_message("m2", "smuggled words"))
        assert chats.search_messages("smuggled") == []
        report = chats.repair_index(full=True)
        assert report.documents_added == 1
        assert [h.message_id for h in chats.search_messages("smuggled")] == ["m2"]

    def test_a_flush_that_fails_is_retried_as_a_rebuild(self, chats, monkeypatch):
        chat = chats.get_chat(chats.create_chat().id)
        original = MessageIndexStore.apply
        calls = {"n": 0}

        def flaky(self, chat_num, changes):
            calls["n"] += 1
            if calls["n"] == 1:
                raise OSError("disk hiccup")
            return original(self, chat_num, changes)

        monkeypatch.setattr(MessageIndexStore, "apply", flaky)
        chat.session.append_message(text_message("m1", "eventually found"))
        assert chats.search_messages("eventually") == []  # the failed flush degrades the read
        assert [h.message_id for h in chats.search_messages("eventually")] == ["m1"]

    def test_a_repair_of_a_consistent_directory_changes_nothing(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        for i in range(20):
            chat.session.append_message(text_message(f"m{i}", f"word {i}"))
        chat.session.delete_messages(["m3"])
        chats.flush_index()
        assert chats.repair_index(full=True).changed is False

    def test_a_closed_directory_leaves_no_lease_behind(self, tmp_path):
        with Chats(tmp_path, "alice") as chats:
            chat = chats.get_chat(chats.create_chat().id)
            chat.session.append_message(text_message("m", "x"))
            assert len(leases(tmp_path)) == 1
        assert leases(tmp_path) == []

    def test_an_abandoned_instance_of_this_process_counts_as_gone(self, tmp_path):
        abandoned = Chats(tmp_path, "alice")
        chat = abandoned.get_chat(abandoned.create_chat().id)
        chat.session.append_message(text_message("m", "lost hint"))
        # Simulate a crash of this instance before its flush: the hint is lost, the lease stays.
        abandoned._index.forget_hints(chat._num)
        abandoned._index.close()
        with Chats(tmp_path, "alice") as chats:
            assert [h.message_id for h in chats.search_messages("lost")] == ["m"]
        abandoned.database.close()


def test_the_crash_writer_helper_runs_in_process(tmp_path):
    with Chats(tmp_path, "alice") as chats:
        chats.create_chat()
        random_writes(chats, random.Random(1), 40, "t")
        assert_paths_agree(chats)
    assert os.path.exists(tmp_path / "alice" / "directory.sqlite")


class TestTwoConnectionsOnOneChat:
    """Payload replay is only trusted while one connection alone writes a chat's file."""

    def test_an_older_pending_edit_never_overwrites_a_newer_one_from_another_writer(self, tmp_path):
        first = Chats(tmp_path, "alice")
        second = Chats(tmp_path, "alice")
        try:
            chat_id = first.create_chat().id
            in_first = first.get_chat(chat_id)
            in_second = second.get_chat(chat_id)
            in_first.session.append_message(text_message("x", "original"))
            first.flush_index()
            in_first.session.update_message(text_message("x", "alpha"))  # pending in first
            in_second.session.update_message(text_message("x", "omega"))  # committed later
            second.flush_index()
            first.flush_index()  # first's payload says alpha; the file says omega
            assert first.search_messages("alpha") == []
            assert [h.message_id for h in first.search_messages("omega")] == ["x"]
        finally:
            first.close()
            second.close()

    def test_concurrent_writers_in_threads_converge_on_the_file(self, tmp_path):
        import threading

        first = Chats(tmp_path, "alice")
        second = Chats(tmp_path, "alice")
        try:
            chat_id = first.create_chat().id
            sessions = [d.get_chat(chat_id).session for d in (first, second)]
            sessions[0].append_message(text_message("x", "start"))

            def writer(n):
                for i in range(60):
                    sessions[n].upsert_message(text_message("x", f"v{n}x{i}"))
                    sessions[n].append_message(text_message(f"m{n}-{i}", f"note{n} {i}"))
                    if i % 7 == 0:
                        (first, second)[n].search_messages("note0")

            threads = [threading.Thread(target=writer, args=(n,)) for n in (0, 1)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for directory in (first, second):
                directory.flush_index()
            final = sessions[0].get_message("x")["parts"][0]["text"]
            assert [h.message_id for h in first.search_messages(final)] == ["x"]
            for word in ("note0", "note1"):
                indexed = first.search_messages(word, limit=1000)
                fanned = first.search_messages_fanout(word, limit=1000)
                assert hit_keys(indexed) == hit_keys(fanned)
        finally:
            first.close()
            second.close()


class TestSchemaUpgrade:
    def test_a_directory_indexed_under_the_first_schema_is_rebuilt_on_open(self, tmp_path):
        from backend.chats import index_store
        from backend.chats.chat_records import ChatRecordStore
        from backend.storage import Database

        with Chats(tmp_path, "alice") as chats:
            chat_id = chats.create_chat().id
            chat = chats.get_chat(chat_id)
            chat.session.append_message(text_message("m1", "survives the upgrade"))
        # Turn the file back into a first-schema directory with an empty message index.
        db = Database(tmp_path / "alice" / "directory.sqlite")
        for table in ("message_fts", "message_docs", "index_leases"):
            db.execute(f"DROP TABLE {table}")
        db.execute("DELETE FROM _migrations WHERE component = ?", (index_store.COMPONENT,))
        ChatRecordStore(db)
        db.migrate(index_store.COMPONENT, index_store.MIGRATIONS[:1])
        db.close()
        with Chats(tmp_path, "alice") as chats:
            assert [h.message_id for h in chats.search_messages("upgrade")] == ["m1"]
        assert leases(tmp_path) == []


class TestNoDeadlock:
    @pytest.mark.timeout(2 * WAIT_S)  # a deadlock hangs: fail instead
    def test_a_flush_never_waits_for_a_chat_whose_writer_waits_for_the_directory(self, chats):
        import threading

        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m1", "before"))
        writer_inside = threading.Event()
        done = threading.Event()

        def writer():
            # Holds the chat's lock (an open chat transaction), then needs the directory.
            with chat.sessions.database.transaction():
                chat.session.append_message(text_message("m2", "during"))
                writer_inside.set()
                chats.record_chat_turn(chat.id, "during")
            done.set()

        with chats.database.transaction():  # what a flush holds while it checks the chat
            thread = threading.Thread(target=writer)
            thread.start()
            assert writer_inside.wait(WAIT_S)
            chats.flush_index()
        thread.join(WAIT_S)
        assert done.is_set()
        assert [h.message_id for h in chats.search_messages("before")] == ["m1"]
        assert [h.message_id for h in chats.search_messages("during")] == ["m2"]
