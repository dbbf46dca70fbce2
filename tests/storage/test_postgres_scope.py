"""The PostgreSQL scope keeps the promises of the SQLite ``Database`` (backend/storage/scope.py):
rows by index and name, ``?`` placeholders, the same integrity error, reentrant transactions
with savepoints and hooks, a version that moves only for others' commits, locked migrations."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import psycopg
import pytest

from backend.config import parse_storage
from backend.errors import InvalidInputError, StorageError
from backend.storage import well_formed_text
from backend.storage.postgres import PostgresEngine, PostgresScope
from backend.storage.postgres.statements import to_psycopg
from backend.storage.scope import IntegrityError
from tests.support.deadlines import CHILD_START_S, WAIT_S


@pytest.fixture
def engine(postgres_url):
    opened = PostgresEngine(parse_storage(postgres_url))
    yield opened
    opened.close()


@pytest.fixture
def scope(engine):
    opened = PostgresScope(engine, "test")
    opened.execute("CREATE TABLE t (k text PRIMARY KEY, v text)")
    yield opened
    opened.close()


def values(scope):
    return [tuple(row) for row in scope.query("SELECT k, v FROM t ORDER BY k")]


class TestStatements:
    def test_rows_answer_by_position_and_by_column_name(self, scope):
        scope.execute("INSERT INTO t VALUES (?, ?)", ("a", "1"))
        row = scope.query_one("SELECT k, v AS value FROM t WHERE k = ?", ("a",))
        assert (row[0], row["k"], row[1], row["value"]) == ("a", "a", "1", "1")
        assert row.keys() == ["k", "value"] and len(row) == 2
        with pytest.raises(IndexError):
            row["missing"]

    def test_placeholders_are_translated_once_and_leave_quoted_text_alone(self, scope):
        sql = "SELECT '?' || ? || '100%' AS s, ? AS n"
        assert to_psycopg(sql) == "SELECT '?' || %s || '100%%' AS s, %s AS n"
        assert to_psycopg(sql) is to_psycopg(sql)  # cached
        row = scope.query_one(sql, ("-", 5))
        assert (row["s"], row["n"]) == ("?-100%", 5)
        assert scope.query_one("SELECT 'a%b' AS s")["s"] == "a%b"

    def test_a_duplicate_key_is_the_integrity_error_every_store_catches(self, scope):
        scope.execute("INSERT INTO t VALUES (?, ?)", ("a", "1"))
        with pytest.raises(sqlite3.IntegrityError) as caught:
            scope.execute("INSERT INTO t VALUES (?, ?)", ("a", "2"))
        assert caught.type is IntegrityError
        assert isinstance(caught.value.__cause__, psycopg.errors.UniqueViolation)
        assert values(scope) == [("a", "1")]

    def test_a_failing_statement_is_a_storage_error_naming_it(self, scope):
        with pytest.raises(StorageError, match=r"in: SELECT nope FROM t"):
            scope.query("SELECT nope FROM t")

    def test_write_counts_rows_and_stats_count_statements(self, scope):
        before = scope.stats.snapshot()
        scope.executemany("INSERT INTO t VALUES (?, ?)", [("a", "1"), ("b", "2")])
        assert scope.write("UPDATE t SET v = ? WHERE k <> ?", ("x", "z")) == 2
        assert len(scope.query("SELECT * FROM t")) == 2
        spent = scope.stats - before
        assert spent.rows_written == 4 and spent.rows_read == 2

    def test_text_with_nul_is_refused_clearly_and_stores_once_the_text_rule_ran(self, scope):
        with pytest.raises(InvalidInputError, match="U\\+0000"):
            scope.execute("INSERT INTO t VALUES (?, ?)", ("a", "x\x00y"))
        scope.execute("INSERT INTO t VALUES (?, ?)", ("a", well_formed_text("x\x00y")))
        assert values(scope) == [("a", "x\ufffdy")]

    def test_a_closed_scope_refuses_statements(self, scope):
        scope.close()
        with pytest.raises(StorageError, match="closed"):
            scope.query("SELECT 1")


class TestTransactions:
    def test_a_transaction_commits_as_one_and_rolls_back_as_one(self, scope):
        with scope.transaction() as db:
            db.execute("INSERT INTO t VALUES ('a', '1')")
        with pytest.raises(RuntimeError), scope.transaction():
            scope.execute("INSERT INTO t VALUES ('b', '2')")
            raise RuntimeError("boom")
        assert values(scope) == [("a", "1")]

    def test_a_nested_block_is_a_savepoint_with_its_own_hooks(self, scope):
        seen = []
        with scope.transaction():
            scope.execute("INSERT INTO t VALUES ('a', '1')")
            scope.after_commit(lambda: seen.append("outer committed"))
            with pytest.raises(IntegrityError), scope.transaction():
                scope.after_commit(lambda: seen.append("inner committed"))
                scope.on_rollback(lambda: seen.append("inner rolled back"))
                scope.execute("INSERT INTO t VALUES ('a', 'duplicate')")
            scope.execute("INSERT INTO t VALUES ('b', '2')")  # the outer one goes on
            assert seen == ["inner rolled back"]
        assert seen == ["inner rolled back", "outer committed"]
        assert values(scope) == [("a", "1"), ("b", "2")]

    def test_hooks_outside_a_transaction_run_now_and_rollback_hooks_on_rollback(self, scope):
        seen = []
        scope.after_commit(lambda: seen.append("now"))
        with pytest.raises(RuntimeError), scope.transaction():
            scope.on_rollback(lambda: seen.append("undone"))
            scope.after_commit(lambda: seen.append("never"))
            raise RuntimeError
        assert seen == ["now", "undone"] and not scope.in_transaction

    def test_another_thread_waits_for_a_transaction_as_on_sqlite(self, scope):
        order = []
        entered = threading.Event()

        def other():
            entered.wait()
            scope.execute("INSERT INTO t VALUES ('b', 'other thread')")
            order.append("other")

        thread = threading.Thread(target=other)
        thread.start()
        with scope.transaction():
            entered.set()
            thread.join(0.3)
            order.append("transaction")
        thread.join()
        assert order == ["transaction", "other"]

    def test_a_snapshot_sees_one_committed_state(self, engine, scope):
        writer = PostgresScope(engine, "test")
        with scope.snapshot():
            assert scope.query("SELECT count(*) FROM t")[0][0] == 0
            writer.execute("INSERT INTO t VALUES ('a', '1')")
            assert scope.query("SELECT count(*) FROM t")[0][0] == 0
        assert scope.query("SELECT count(*) FROM t")[0][0] == 1

    def test_the_write_lock_waits_at_most_the_lock_timeout(self, postgres_url, scope):
        short = PostgresEngine(parse_storage(postgres_url + "%20-clock_timeout%3D200"))
        try:
            other = PostgresScope(short, "test")
            with scope.transaction():
                scope.query("SELECT 1")  # the first statement takes the scope's version row
                with pytest.raises(StorageError, match="lock timeout"), other.transaction():
                    other.query("SELECT 1")
        finally:
            short.close()

    def test_a_transaction_that_runs_no_statement_costs_no_round_trip_and_no_commit(
        self, engine, scope
    ):
        seen = []
        other = PostgresScope(engine, "test")
        before = other.data_version()
        with scope.transaction():
            scope.after_commit(lambda: seen.append("committed"))
        assert other.data_version() == before  # no version bump: nothing began
        assert seen == ["committed"] and not scope.in_transaction


class TestDerivedRows:
    """Rows rebuilt after any loss (vectors) commit without waiting for the WAL's flush."""

    def test_its_commit_does_not_wait_for_the_disk_and_the_next_transaction_does(
        self, postgres_url, scope
    ):
        # The suite's server commits without waiting (a test server); this engine's sessions wait.
        durable = PostgresEngine(parse_storage(postgres_url + "%20-csynchronous_commit%3Don"))
        try:
            vectors = PostgresScope(durable, "test")
            with vectors.derived_transaction() as db:
                db.execute("INSERT INTO t VALUES ('vector', '1')")
                assert db.query_one("SHOW synchronous_commit")[0] == "off"
            with vectors.transaction():
                assert vectors.query_one("SHOW synchronous_commit")[0] == "on"
        finally:
            durable.close()
        assert values(scope) == [("vector", "1")]

    def test_inside_another_transaction_it_joins_it_and_rolls_back_with_it(self, scope):
        with pytest.raises(RuntimeError), scope.transaction():
            scope.execute("INSERT INTO t VALUES ('message', '1')")
            with scope.derived_transaction():
                scope.execute("INSERT INTO t VALUES ('vector', '1')")
            raise RuntimeError("the outer write failed")
        assert values(scope) == []


class TestDataVersion:
    def test_it_moves_for_another_scope_s_commit_and_never_for_its_own(self, engine, scope):
        other = PostgresScope(engine, "test")
        start = scope.data_version()
        with scope.transaction():
            scope.execute("INSERT INTO t VALUES ('a', '1')")
        scope.execute("INSERT INTO t VALUES ('b', '2')")  # a write outside: its own commit
        assert scope.data_version() == start
        other.execute("INSERT INTO t VALUES ('c', '3')")
        assert scope.data_version() != start
        moved = scope.data_version()
        scope.query("SELECT * FROM t")
        assert scope.data_version() == moved

    def test_inside_its_own_write_transaction_it_reads_as_before_it(self, engine, scope):
        start = scope.data_version()
        with scope.transaction():
            assert scope.data_version() == start  # the first statement: it takes the lock
            scope.execute("INSERT INTO t VALUES ('a', '1')")
            assert scope.data_version() == start
            with scope.transaction():
                assert scope.data_version() == start  # inside a savepoint too
        assert scope.data_version() == start
        with scope.snapshot():
            assert scope.data_version() == start  # a read transaction bumps nothing

    def test_a_read_only_with_query_does_not_move_it_for_others(self, engine, scope):
        other = PostgresScope(engine, "test")
        start = other.data_version()
        rows = scope.query("WITH kept AS (SELECT k FROM t) SELECT count(*) FROM kept")
        assert rows[0][0] == 0
        assert other.data_version() == start
        scope.query("WITH new AS (INSERT INTO t VALUES ('a', '1') RETURNING k) SELECT * FROM new")
        assert other.data_version() == start + 1  # a data-modifying WITH is a write

    def test_scopes_of_other_names_do_not_move_it(self, engine, scope):
        start = scope.data_version()
        PostgresScope(engine, "elsewhere").execute("CREATE TABLE u (x int)")
        assert scope.data_version() == start


def _m001_create(db):
    db.execute("SELECT pg_sleep(0.3)")  # both processes are inside migrate() at once
    db.execute("CREATE TABLE racing (x int)")


def _m002_seed(db):
    db.execute("INSERT INTO racing VALUES (1)")


def _migrate_in_a_process(url, barrier, results):
    engine = PostgresEngine(parse_storage(url))
    try:
        scope = PostgresScope(engine, "race")
        barrier.wait()
        results.put(scope.migrate("race", [_m001_create, _m002_seed]))
    except BaseException as exc:
        results.put(repr(exc))
    finally:
        engine.close()


class TestMigrations:
    def test_two_processes_starting_at_once_create_one_schema_and_no_error(self, postgres_url):
        context = multiprocessing.get_context("spawn")
        barrier, results = context.Barrier(2), context.Queue()
        processes = [
            context.Process(target=_migrate_in_a_process, args=(postgres_url, barrier, results))
            for _ in range(2)
        ]
        for process in processes:
            process.start()
        outcomes = sorted((results.get(timeout=CHILD_START_S) for _ in processes), key=len)
        for process in processes:
            process.join(WAIT_S)
        assert outcomes == [[], ["_m001_create", "_m002_seed"]]
        with psycopg.connect(postgres_url) as conn:
            assert conn.execute("SELECT count(*) FROM racing").fetchone() == (1,)

    def test_a_failed_migration_leaves_nothing_and_runs_again(self, engine):
        scope = PostgresScope(engine, "m")
        calls = []

        def _m001_half(db):
            calls.append(1)
            db.execute("CREATE TABLE half (x int)")
            if len(calls) == 1:
                raise RuntimeError("crash mid-migration")

        with pytest.raises(RuntimeError):
            scope.migrate("m", [_m001_half])
        assert not scope.table_exists("half")
        assert scope.migrate("m", [_m001_half]) == ["_m001_half"]
        assert scope.migrate("m", [_m001_half]) == []


class TestConnectionsTheServerDropped:
    def test_a_scope_replaces_them_and_carries_on(self, postgres_server, engine, scope):
        scope.execute("INSERT INTO t VALUES ('a', '1')")
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'chats' AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        assert ended >= 1
        assert values(scope) == [("a", "1")]  # a read on a fresh connection
        scope.execute("INSERT INTO t VALUES ('b', '2')")  # a write: BEGIN on a fresh one
        assert values(scope) == [("a", "1"), ("b", "2")]


class TestTheFirstStatementOfATransaction:
    """BEGIN and the version bump travel with it: what it reports is still exact."""

    def test_its_row_count_and_rows_are_those_of_the_statement(self, scope):
        scope.execute("INSERT INTO t VALUES ('a', '1'), ('b', '2')")
        with scope.transaction():
            assert scope.write("UPDATE t SET v = 'x'") == 2
        with scope.transaction():
            assert [tuple(r) for r in scope.query("SELECT k FROM t ORDER BY k")] == [
                ("a",),
                ("b",),
            ]

    def test_its_failure_rolls_the_transaction_back_and_the_scope_goes_on(self, scope):
        scope.execute("INSERT INTO t VALUES ('a', '1')")
        with pytest.raises(IntegrityError), scope.transaction():
            scope.execute("INSERT INTO t VALUES ('a', 'again')")
        with scope.transaction():
            scope.execute("INSERT INTO t VALUES ('b', '2')")
        assert values(scope) == [("a", "1"), ("b", "2")]
