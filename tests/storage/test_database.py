"""The connection wrapper every store stands on."""

import threading

import pytest

from backend.errors import StorageError
from backend.storage import Database


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "t.sqlite")
    database.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
    yield database
    database.close()


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


class TestAccounting:
    def test_rows_written_counts_exact_row_changes(self, db):
        before = db.stats.snapshot()
        with db.transaction():
            db.execute("INSERT INTO t VALUES ('a', '1')")
            db.execute("INSERT INTO t VALUES ('b', '1')")
            db.execute("UPDATE t SET v = '2'")
        assert (db.stats - before).rows_written == 4


class TestErrors:
    def test_sqlite_errors_become_storage_errors_chained_to_the_cause(self, db):
        with pytest.raises(StorageError) as info:
            db.execute("SELECT * FROM no_such_table")
        assert info.value.__cause__ is not None


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
