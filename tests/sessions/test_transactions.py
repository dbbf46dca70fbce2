"""Atomicity, the change feed's timing and order, threads, and other connections to one file."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading

import pytest

from backend.sessions import Sessions, estimate_message_tokens
from backend.storage import Database
from tests.conftest import ROOT
from tests.sessions.conftest import append_chain, ids, text_message


@pytest.fixture
def other_table(sessions):
    sessions.database.execute("CREATE TABLE other (k TEXT PRIMARY KEY, v TEXT)")
    return sessions.database


class Boom(Exception):
    pass


class TestCallerTransactions:
    def test_message_writes_commit_atomically_with_another_stores_rows(
        self, sessions, session, other_table
    ):
        with sessions.database.transaction():
            session.append_message(text_message("m1"))
            other_table.execute("INSERT INTO other VALUES ('state', 'v1')")
        assert ids(session.get_history()) == ["m1"]
        assert other_table.query_one("SELECT v FROM other")["v"] == "v1"

    def test_a_failure_after_the_message_write_rolls_both_back(
        self, sessions, session, other_table
    ):
        append_chain(session, "r1")
        with pytest.raises(Boom), sessions.database.transaction():
            session.append_message(text_message("r2"))
            other_table.execute("INSERT INTO other VALUES ('state', 'v1')")
            raise Boom
        assert other_table.query("SELECT * FROM other") == []
        assert ids(session.get_history()) == ["r1"]

    def test_events_fire_only_after_the_outer_commit(self, sessions, session):
        seen: list[tuple[str, bool]] = []
        sessions.subscribe(lambda e: seen.append((e.type, sessions.database.in_transaction)))
        with sessions.database.transaction():
            session.append_message(text_message("a"))
            session.append_message(text_message("b"))
            assert seen == []
        assert seen == [("append", False), ("append", False)]

    def test_a_rolled_back_write_emits_nothing(self, sessions, session, events):
        with pytest.raises(Boom), sessions.database.transaction():
            session.append_message(text_message("a"))
            session.clear_messages()
            raise Boom
        assert events == []

    def test_forgets_a_rolled_back_appends_tail_and_estimate(self, sessions, session):
        append_chain(session, "r1")
        session.token_estimate()
        with pytest.raises(Boom), sessions.database.transaction():
            session.append_message(text_message("r2"))
            assert session.token_estimate() > 0
            raise Boom
        session.append_message(text_message("r3"))
        assert ids(session.get_history()) == ["r1", "r3"]
        assert session.token_estimate() == estimate_message_tokens(
            [text_message("r1"), text_message("r3")]
        )

    def test_forgets_a_rolled_back_delete(self, sessions, session):
        append_chain(session, "a", "b")
        with pytest.raises(Boom), sessions.database.transaction():
            session.delete_messages(["b"])
            session.get_latest_leaf()  # re-derives the tail inside the doomed transaction
            raise Boom
        session.append_message(text_message("c"))
        assert ids(session.get_history()) == ["a", "b", "c"]

    def test_a_caller_savepoint_rollback_never_leaves_a_stale_parent(self, sessions, session):
        append_chain(session, "a")
        with sessions.database.transaction():
            with pytest.raises(Boom), sessions.database.transaction():
                session.append_message(text_message("doomed"))
                raise Boom
            session.append_message(text_message("b"))
        session.append_message(text_message("c"))
        assert ids(session.get_history()) == ["a", "b", "c"]
        seqs = [
            row["seq"]
            for row in sessions.database.query("SELECT seq FROM session_messages ORDER BY seq")
        ]
        assert len(seqs) == len(set(seqs))

    def test_a_caller_savepoint_rollback_of_a_delete_is_caught_too(self, sessions, session):
        append_chain(session, "a", "b")
        with sessions.database.transaction():
            with pytest.raises(Boom), sessions.database.transaction():
                session.delete_messages(["b"])
                session.get_latest_leaf()
                raise Boom
            session.append_message(text_message("c"))
        assert ids(session.get_history()) == ["a", "b", "c"]

    def test_a_write_undone_by_a_caller_savepoint_emits_no_event(self, sessions, session, events):
        with sessions.database.transaction():
            with pytest.raises(Boom), sessions.database.transaction():
                session.append_message(text_message("doomed"))
                raise Boom
            assert session.get_message("doomed") is None
        assert events == []


class TestChangeFeed:
    def test_dispatches_in_order_with_stored_messages(self, session, events):
        append_chain(session, "a")
        session.append_message(text_message("a", "duplicate"))
        session.update_message(text_message("a", "edited"))
        session.delete_messages(["a"])
        session.clear_messages()
        assert [e.type for e in events] == ["append", "append", "update", "delete", "clear"]
        assert events[0].inserted is True and events[1].inserted is False
        assert events[1].message == text_message("a")  # the stored one, not the duplicate
        assert events[2].message == text_message("a", "edited")
        assert all(e.session_id == "" for e in events)

    def test_reports_imports_and_direct_compactions(self, session, events):
        append_chain(session, "a", "b")
        session.import_message(text_message("i"), parent_id="b", created_at=1)
        session.add_compaction("s", "a", "b")
        assert [e.type for e in events] == ["append", "append", "import", "compaction"]

    def test_an_append_event_names_the_parent_it_was_stored_under(self, session, events):
        append_chain(session, "a")
        session.append_message(text_message("b"), parent_id="not-a-real-id")
        assert events[-1].parent_id is None
        append_chain(session, "c")
        assert events[-1].parent_id == "b"

    def test_events_are_immutable(self, session, events):
        append_chain(session, "a")
        with pytest.raises(AttributeError):
            events[0].inserted = False  # type: ignore[misc]

    def test_a_failing_listener_is_logged_and_never_breaks_the_write(
        self, sessions, session, caplog
    ):
        seen: list[str] = []

        def broken(event):
            raise RuntimeError("listener bug")

        sessions.subscribe(broken)
        sessions.subscribe(lambda e: seen.append(e.type))
        with caplog.at_level(logging.WARNING, logger="backend.sessions"):
            result = session.append_message(text_message("a"))
        assert result.inserted
        assert seen == ["append"]
        assert "listener failed" in caplog.text

    def test_unsubscribe_stops_delivery(self, sessions, session):
        seen: list[str] = []
        unsubscribe = sessions.subscribe(lambda e: seen.append(e.type))
        append_chain(session, "a")
        unsubscribe()
        unsubscribe()  # idempotent
        append_chain(session, "b")
        assert seen == ["append"]

    def test_covers_every_session_of_the_file(self, sessions, events):
        sessions.session("x").append_message(text_message("a"))
        sessions.session("y").append_message(text_message("b"))
        assert [e.session_id for e in events] == ["x", "y"]

    def test_a_listener_that_writes_sees_its_own_event_after_the_current_one(self, sessions):
        session = sessions.session()
        order: list[str] = []

        def first(event):
            order.append(f"first:{event.message['id']}")
            if event.message["id"] == "a":
                session.append_message(text_message("from-listener"))

        sessions.subscribe(first)
        sessions.subscribe(lambda e: order.append(f"second:{e.message['id']}"))
        append_chain(session, "a")
        assert order == [
            "first:a",
            "second:a",
            "first:from-listener",
            "second:from-listener",
        ]

    def test_events_from_many_threads_arrive_in_commit_order(self, sessions, session):
        received: list[str] = []
        sessions.subscribe(lambda e: received.append(e.message["id"]))

        def writer(name: str) -> None:
            for index in range(50):
                session.append_message(text_message(f"{name}-{index}"))

        threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        committed = [
            row["id"]
            for row in sessions.database.query(
                "SELECT id FROM session_messages WHERE session_id = '' ORDER BY seq"
            )
        ]
        assert received == committed


class TestThreads:
    def test_concurrent_appends_build_one_chain_without_losing_a_message(self, session):
        def writer(name: str) -> None:
            for index in range(100):
                session.append_message(text_message(f"{name}-{index}"))

        threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        history = session.get_history()
        assert len(history) == 400
        assert len(set(ids(history))) == 400

    def test_reads_during_writes_always_see_a_consistent_prefix(self, session):
        stop = threading.Event()
        problems: list[str] = []

        def reader() -> None:
            while not stop.is_set():
                seen = ids(session.get_history())
                expected = [f"m{i}" for i in range(len(seen))]
                if seen != expected:
                    problems.append(repr(seen[-3:]))

        thread = threading.Thread(target=reader)
        thread.start()
        for index in range(200):
            session.append_message(text_message(f"m{index}"))
        stop.set()
        thread.join()
        assert problems == []


class TestOtherConnections:
    def test_two_stores_on_one_file_see_each_others_appends(self, db_path):
        with Sessions(db_path) as first, Sessions(db_path) as second:
            a, b = first.session(), second.session()
            a.append_message(text_message("a"))
            b.append_message(text_message("b"))
            a.append_message(text_message("c"))
            assert ids(a.get_history()) == ["a", "b", "c"]
            assert ids(b.get_history()) == ["a", "b", "c"]
            assert a.token_estimate() == b.token_estimate()

    def test_another_connections_delete_is_noticed(self, db_path):
        with Sessions(db_path) as first, Sessions(db_path) as second:
            append_chain(first.session(), "a", "b")
            second.session().delete_messages(["b"])
            first.session().append_message(text_message("c"))
            assert ids(first.session().get_history()) == ["a", "c"]

    def test_an_index_built_by_another_connection_is_maintained(self, db_path):
        with Sessions(db_path) as first, Sessions(db_path) as second:
            first.session().append_message(text_message("warm"))
            second.session().search("anything")
            first.session().append_message(text_message("new", "findable words"))
            assert [r.id for r in second.session().search("findable")] == ["new"]

    def test_another_process_appending_to_the_same_file_is_safe(self, db_path):
        with Sessions(db_path) as store:
            session = store.session()
            append_chain(session, "parent-1")
            script = textwrap.dedent(
                f"""
                from backend.sessions import Sessions
                with Sessions({str(db_path)!r}) as store:
                    for i in range(20):
                        store.session().append_message(
                            {{"id": f"child-{{i}}", "role": "user", "parts": []}}
                        )
                """
            )
            subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True)
            append_chain(session, "parent-2")
            history = ids(session.get_history())
        assert history == ["parent-1", *(f"child-{i}" for i in range(20)), "parent-2"]

    def test_a_store_can_share_a_database_another_component_opened(self, db_path):
        database = Database(db_path)
        store = Sessions(database)
        store.session().append_message(text_message("a"))
        store.close()  # does not close a database it did not open
        assert database.query_one("SELECT count(*) AS n FROM session_messages")["n"] == 1
        database.close()
