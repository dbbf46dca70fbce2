"""The connection wrapper every store stands on."""

import sqlite3
import threading

import pytest

from backend.errors import StorageError
from backend.storage import Database, OpStats
from tests.support.deadlines import WAIT_S


class TestTransactions:
    def test_a_failing_block_leaves_nothing_behind(self, db):
        with pytest.raises(RuntimeError), db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
            raise RuntimeError("boom")
        assert db.query("SELECT * FROM t") == []

    def test_a_failing_nested_block_rolls_back_only_itself(self, db):
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('outer', '1')")
            with pytest.raises(RuntimeError), db.transaction():
                db.execute("INSERT INTO t VALUES ('inner', '1')")
                raise RuntimeError("boom")
        assert [row["k"] for row in db.query("SELECT k FROM t")] == ["outer"]

    def test_after_commit_callbacks_run_only_once_the_outermost_block_commits(self, db):
        seen: list[str] = []
        with db.transaction():
            with db.transaction():
                db.after_commit(lambda: seen.append("inner"))
            assert seen == []
        assert seen == ["inner"]

    def test_rollback_discards_after_commit_callbacks_and_runs_rollback_callbacks(self, db):
        seen: list[str] = []
        with pytest.raises(RuntimeError), db.transaction():
            db.after_commit(lambda: seen.append("committed"))
            db.on_rollback(lambda: seen.append("rolled back"))
            raise RuntimeError
        assert seen == ["rolled back"]

    def test_after_commit_outside_a_transaction_runs_at_once(self, db):
        seen: list[int] = []
        db.after_commit(lambda: seen.append(1))
        assert seen == [1]

    def test_the_block_binds_the_database(self, db):
        with db.transaction() as bound:
            assert bound is db
            assert db.in_transaction
        assert not db.in_transaction

    def test_after_commit_callbacks_run_outside_the_lock_in_registration_order(self, db):
        seen: list[object] = []

        def probe(name: str) -> None:
            seen.append((name, _free_for_another_thread(db.lock)))

        with db.transaction():
            db.after_commit(lambda: probe("first"))
            db.after_commit(lambda: probe("second"))
        assert seen == [("first", True), ("second", True)]

    def test_a_callback_may_open_a_new_transaction(self, db):
        def write_again() -> None:
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('from callback', '1')")

        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
            db.after_commit(write_again)
        assert sorted(row["k"] for row in db.query("SELECT k FROM t")) == ["a", "from callback"]

    def test_a_released_savepoint_keeps_its_hooks_for_the_outer_commit(self, db):
        seen: list[str] = []
        with db.transaction():
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('inner', '1')")
                db.on_rollback(lambda: seen.append("rolled back"))
                db.after_commit(lambda: seen.append("committed"))
            assert seen == []
        assert seen == ["committed"]

    def test_rolling_back_the_outer_block_runs_the_hooks_of_a_released_savepoint(self, db):
        seen: list[str] = []
        with pytest.raises(RuntimeError), db.transaction():
            with db.transaction():
                db.on_rollback(lambda: seen.append("inner rolled back"))
            raise RuntimeError
        assert seen == ["inner rolled back"]
        assert db.query("SELECT * FROM t") == []

    def test_deeply_nested_failures_undo_only_their_own_level(self, db):
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('1', '')")
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('2', '')")
                with pytest.raises(RuntimeError), db.transaction():
                    db.execute("INSERT INTO t VALUES ('3', '')")
                    raise RuntimeError
                db.execute("INSERT INTO t VALUES ('2b', '')")
        assert sorted(row["k"] for row in db.query("SELECT k FROM t")) == ["1", "2", "2b"]
        assert not db.in_transaction


class TestAccounting:
    def test_rows_written_counts_exact_row_changes(self, db):
        before = db.stats.snapshot()
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
            db.execute("INSERT INTO t VALUES ('b', '1')")
            db.execute("UPDATE t SET v = '2'")
        assert (db.stats - before).rows_written == 4

    def test_a_transaction_with_one_insert_is_three_statements_and_one_row(self, db):
        before = db.stats.snapshot()
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
        assert db.stats - before == OpStats(statements=3, rows_read=0, rows_written=1)

    def test_rows_written_by_a_returning_insert_are_counted_once_its_rows_are_read(self, db):
        before = db.stats.snapshot()
        cursor = db.execute("INSERT INTO t VALUES ('a', '1'), ('b', '2') RETURNING k")
        assert sorted(row["k"] for row in cursor.fetchall()) == ["a", "b"]
        assert (db.stats - before).rows_written == 2

    def test_rows_written_by_a_returning_update_read_with_fetchone_are_counted(self, db):
        db.execute("INSERT INTO t VALUES ('a', '1')")
        before = db.stats.snapshot()
        row = db.execute("UPDATE t SET v = '2' WHERE k = 'a' RETURNING v").fetchone()
        assert row["v"] == "2"
        assert (db.stats - before).rows_written == 1

    def test_a_returning_statement_run_through_query_counts_its_rows_both_ways(self, db):
        before = db.stats.snapshot()
        rows = db.query("INSERT INTO t VALUES ('a', '1'), ('b', '2') RETURNING k")
        assert len(rows) == 2
        assert db.stats - before == OpStats(statements=1, rows_read=2, rows_written=2)

    def test_executemany_counts_one_statement_and_every_row(self, db):
        before = db.stats.snapshot()
        db.executemany("INSERT INTO t VALUES (?, ?)", [("a", "1"), ("b", "2"), ("c", "3")])
        assert db.stats - before == OpStats(statements=1, rows_read=0, rows_written=3)

    def test_a_rolled_back_write_still_counts_the_rows_it_wrote(self, db):
        # The cost was paid even though the outcome was undone.
        before = db.stats.snapshot()
        with pytest.raises(RuntimeError), db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
            raise RuntimeError
        assert (db.stats - before).rows_written == 1

    def test_a_failing_statement_is_not_counted(self, db):
        before = db.stats.snapshot()
        with pytest.raises(StorageError):
            db.execute("SELECT * FROM no_such_table")
        assert db.stats - before == OpStats(0, 0, 0)

    def test_the_counts_survive_closing(self, tmp_path):
        database = Database(tmp_path / "c.sqlite")
        database.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        database.execute("INSERT INTO t VALUES ('a')")
        database.close()
        assert database.stats == OpStats(statements=2, rows_read=0, rows_written=1)

    def test_reading_the_stats_does_not_wait_for_a_transaction_on_another_thread(self, db):
        inside, release = threading.Event(), threading.Event()

        def hold_a_transaction() -> None:
            with db.transaction():
                db.execute("INSERT INTO t VALUES ('a', '1')")
                inside.set()
                release.wait()

        holder = threading.Thread(target=hold_a_transaction)
        holder.start()
        try:
            assert inside.wait(timeout=WAIT_S)
            reader = threading.Thread(target=lambda: db.stats.snapshot())
            reader.start()
            reader.join(timeout=WAIT_S)  # a hang guard, not a timing assertion
            assert not reader.is_alive()
        finally:
            release.set()
            holder.join()


class TestErrors:
    def test_sqlite_errors_become_storage_errors_chained_to_the_cause(self, db):
        with pytest.raises(StorageError) as info:
            db.execute("SELECT * FROM no_such_table")
        assert info.value.__cause__ is not None

    def test_integrity_errors_reach_the_store_untranslated(self, db):
        db.execute("INSERT INTO t VALUES ('a', '1')")
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("INSERT INTO t VALUES ('a', '2')")

    @pytest.mark.parametrize(
        "use",
        [
            lambda db: db.execute("SELECT 1"),
            lambda db: db.executemany("INSERT INTO t VALUES (?, ?)", [("a", "1")]),
            lambda db: db.query("SELECT 1"),
            lambda db: db.data_version(),
            lambda db: db.transaction().__enter__(),
        ],
        ids=["execute", "executemany", "query", "data_version", "transaction"],
    )
    def test_a_closed_database_raises_storage_error(self, db, use):
        db.close()
        with pytest.raises(StorageError) as info:
            use(db)
        assert isinstance(info.value.__cause__, sqlite3.ProgrammingError)

    def test_a_transaction_that_cannot_begin_leaves_the_lock_free(self, db):
        db.close()
        with pytest.raises(StorageError), db.transaction():
            pass  # pragma: no cover - BEGIN fails first
        assert _free_for_another_thread(db.lock)
        assert not db.in_transaction


class TestMigrations:
    def test_each_migration_runs_once_and_is_recorded(self, tmp_path):
        calls: list[str] = []

        def m001_create(database: Database) -> None:
            calls.append("m001")
            database.execute("CREATE TABLE x (a INTEGER PRIMARY KEY)")

        path = tmp_path / "m.sqlite"
        assert Database(path).migrate("demo", [m001_create]) == ["m001_create"]
        assert Database(path).migrate("demo", [m001_create]) == []
        assert calls == ["m001"]

    def test_a_failing_migration_is_not_recorded_and_leaves_no_half_schema(self, tmp_path):
        def m001_broken(database: Database) -> None:
            database.execute("CREATE TABLE y (a INTEGER PRIMARY KEY)")
            database.execute("THIS IS NOT SQL")

        db = Database(tmp_path / "m.sqlite")
        with pytest.raises(StorageError):
            db.migrate("demo", [m001_broken])
        assert not db.table_exists("y")
        assert db.query("SELECT * FROM _migrations") == []


class TestWrite:
    def test_it_returns_the_rows_the_statement_changed(self, db):
        assert db.write("INSERT INTO t VALUES ('a', '1')") == 1
        assert db.write("INSERT OR IGNORE INTO t VALUES ('a', '2')") == 0
        assert db.write("INSERT INTO t VALUES ('b', '1')") == 1
        assert db.write("UPDATE t SET v = ?", ("3",)) == 2

    def test_it_is_one_counted_statement_with_exact_rows_written(self, db):
        before = db.stats.snapshot()
        db.write("INSERT INTO t VALUES (?, ?)", ("a", "1"))
        assert db.stats - before == OpStats(statements=1, rows_read=0, rows_written=1)

    def test_a_returning_clause_is_finished_and_its_rows_dropped(self, db):
        before = db.stats.snapshot()
        assert db.write("INSERT INTO t VALUES ('a', '1'), ('b', '2') RETURNING k") == 2
        assert (db.stats - before).rows_written == 2
        assert db.write("DELETE FROM t RETURNING k") == 2  # the shared cursor is free again

    def test_errors_are_translated_like_execute(self, db):
        with pytest.raises(StorageError):
            db.write("INSERT INTO no_such_table VALUES (1)")
        db.write("INSERT INTO t VALUES ('a', '1')")
        with pytest.raises(sqlite3.IntegrityError):
            db.write("INSERT INTO t VALUES ('a', '2')")

    def test_a_closed_database_raises_storage_error(self, db):
        db.close()
        with pytest.raises(StorageError):
            db.write("INSERT INTO t VALUES ('a', '1')")


class TestDataVersion:
    def test_it_moves_when_another_connection_commits_and_not_for_our_own_commits(self, tmp_path):
        path = tmp_path / "v.sqlite"
        ours, theirs = Database(path), Database(path)
        ours.execute("CREATE TABLE n (i INTEGER PRIMARY KEY)")
        start = ours.data_version()
        with ours.transaction():
            ours.execute("INSERT INTO n VALUES (1)")
        assert ours.data_version() == start
        theirs.execute("INSERT INTO n VALUES (2)")
        assert ours.data_version() != start

    def test_it_is_one_statement_that_reads_no_rows(self, db):
        before = db.stats.snapshot()
        db.data_version()
        assert db.stats - before == OpStats(statements=1, rows_read=0, rows_written=0)

    def test_a_cursor_the_caller_holds_is_not_disturbed_by_transactions(self, db):
        db.executemany("INSERT INTO t VALUES (?, ?)", [("a", "1"), ("b", "2"), ("c", "3")])
        rows = db.iterate("SELECT k FROM t ORDER BY k")
        assert next(rows)["k"] == "a"
        with db.transaction():
            db.data_version()
            db.execute("INSERT INTO t VALUES ('d', '4')")
        assert [row["k"] for row in rows] == ["b", "c", "d"]


class TestSnapshots:
    def test_reads_inside_a_snapshot_see_one_state_while_another_connection_commits(self, tmp_path):
        path = tmp_path / "s.sqlite"
        reader, writer = Database(path), Database(path)
        try:
            writer.execute("CREATE TABLE n (i INTEGER PRIMARY KEY)")
            writer.execute("INSERT INTO n VALUES (1)")
            with reader.snapshot():
                before = reader.query_one("SELECT count(*) FROM n")[0]
                writer.execute("INSERT INTO n VALUES (2)")  # a deferred BEGIN blocks no writer
                assert reader.query_one("SELECT count(*) FROM n")[0] == before == 1
            assert reader.query_one("SELECT count(*) FROM n")[0] == 2
        finally:
            reader.close()
            writer.close()

    def test_inside_a_write_transaction_it_joins_it(self, db):
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
            with db.snapshot():
                assert db.query_one("SELECT v FROM t WHERE k = 'a'")["v"] == "1"
            db.execute("INSERT INTO t VALUES ('b', '2')")
        assert db.query_one("SELECT count(*) FROM t")[0] == 2


class TestConcurrency:
    def test_two_connections_to_one_file_serialise_their_writes(self, tmp_path):
        path = tmp_path / "c.sqlite"
        Database(path).execute("CREATE TABLE n (i INTEGER PRIMARY KEY, v INTEGER)")
        Database(path).execute("INSERT INTO n VALUES (1, 0)")

        def bump() -> None:
            db = Database(path)
            for _ in range(100):
                with db.transaction():
                    (value,) = db.query_one("SELECT v FROM n WHERE i = 1")
                    db.execute("UPDATE n SET v = ? WHERE i = 1", (value + 1,))
            db.close()

        threads = [threading.Thread(target=bump) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert Database(path).query_one("SELECT v FROM n")["v"] == 400


class TestSavepointHooks:
    def test_a_rolled_back_savepoint_drops_its_after_commit_hooks_and_runs_its_rollback_hooks(
        self, db
    ):
        seen: list[str] = []
        with db.transaction():
            db.after_commit(lambda: seen.append("outer committed"))
            with pytest.raises(RuntimeError), db.transaction():
                db.after_commit(lambda: seen.append("inner committed"))
                db.on_rollback(lambda: seen.append("inner rolled back"))
                raise RuntimeError
            assert seen == ["inner rolled back"]
        assert seen == ["inner rolled back", "outer committed"]


def _free_for_another_thread(lock: threading.RLock) -> bool:
    """Whether another thread can take ``lock`` (it gives up after a generous hang guard)."""
    taken: list[bool] = []

    def take_and_give_back() -> None:
        if lock.acquire(timeout=WAIT_S):
            lock.release()
            taken.append(True)

    other = threading.Thread(target=take_and_give_back)
    other.start()
    other.join()
    return taken == [True]


class TestConcurrentMigrations:
    def test_connections_opening_one_new_file_at_once_apply_each_migration_once(self, tmp_path):
        path = tmp_path / "race.sqlite"
        calls: list[int] = []

        def m001_create(database: Database) -> None:
            calls.append(1)
            database.execute("CREATE TABLE IF NOT EXISTS r (a INTEGER PRIMARY KEY)")

        barrier = threading.Barrier(4)
        errors: list[BaseException] = []

        def open_and_migrate() -> None:
            try:
                barrier.wait(timeout=WAIT_S)
                database = Database(path)
                try:
                    database.migrate("race", [m001_create])
                finally:
                    database.close()
            except BaseException as exc:  # the test reports it below
                errors.append(exc)

        threads = [threading.Thread(target=open_and_migrate) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert calls == [1]
