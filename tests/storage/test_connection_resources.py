"""What a connection holds: its file, opened only at its first statement, and bounded memory.

A person's directory connection stays open while they have a tab, so both matter per person.
"""

import pytest

from backend.errors import StorageError
from backend.storage import Database
from tests.support.descriptors import handles_of
from tests.support.sqlite_heap import sqlite_heap_bytes


class TestOnDemandConnection:
    def test_it_opens_the_file_at_its_first_statement_and_sees_what_others_wrote(
        self, tmp_path, db
    ):
        reader = Database(tmp_path / "t.sqlite", on_demand=True)
        try:
            assert not reader.connected
            assert handles_of(tmp_path / "t.sqlite") == 1  # the fixture's connection only
            db.execute("INSERT INTO t VALUES ('a', '1')")
            assert [tuple(row) for row in reader.query("SELECT k, v FROM t")] == [("a", "1")]
            assert reader.connected
            assert handles_of(tmp_path / "t.sqlite") == 2
        finally:
            reader.close()

    def test_every_kind_of_first_statement_connects(self, tmp_path, db):
        for use in (
            lambda d: d.execute("SELECT 1"),
            lambda d: d.write("INSERT INTO t VALUES ('w', '1')"),
            lambda d: d.executemany("INSERT INTO t VALUES (?, ?)", [("m", "1")]),
            lambda d: d.data_version(),
            _commit_nothing,
        ):
            other = Database(tmp_path / "t.sqlite", on_demand=True)
            try:
                use(other)
                assert other.connected
            finally:
                other.close()

    def test_closing_it_unused_opens_nothing_and_later_statements_fail_clearly(self, tmp_path):
        reader = Database(tmp_path / "never.sqlite", on_demand=True)
        reader.close()
        assert not (tmp_path / "never.sqlite").exists()
        assert reader.stats.rows_written == 0
        with pytest.raises(StorageError, match="closed"):
            reader.query("SELECT 1")

    def test_a_snapshot_and_a_backup_work_before_any_statement(self, tmp_path, db):
        db.execute("INSERT INTO t VALUES ('a', '1')")
        reader = Database(tmp_path / "t.sqlite", on_demand=True)
        try:
            with reader.snapshot() as snap:
                assert snap.query_one("SELECT v FROM t WHERE k = 'a'")[0] == "1"
            other = Database(tmp_path / "t.sqlite", on_demand=True)
            other.backup_to(tmp_path / "copy.sqlite")
            other.close()
        finally:
            reader.close()
        copy = Database(tmp_path / "copy.sqlite")
        assert copy.query_one("SELECT v FROM t")[0] == "1"
        copy.close()


def _commit_nothing(database: Database) -> None:
    with database.transaction():
        pass


class TestMemoryHeld:
    """A connection stays open as long as its person has a tab: what it holds is bounded."""

    def test_scanning_a_file_larger_than_the_page_cache_holds_only_the_cache(self, tmp_path):
        writer = Database(tmp_path / "big.sqlite")
        writer.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
        writer.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 1000) for i in range(4000)])
        before = sqlite_heap_bytes()
        reader = Database(tmp_path / "big.sqlite")
        try:
            assert reader.query_one("SELECT count(*) FROM t WHERE v != ''")[0] == 4000
            held = sqlite_heap_bytes() - before
        finally:
            reader.close()
            writer.close()
        # A 4 MB file read whole: the connection keeps under half a MiB (its page cache,
        # PAGE_CACHE_KIB, and its own ~100 KiB), not SQLite's default 2 MB of pages.
        assert held < 512 * 1024

    def test_many_distinct_statements_keep_only_a_few_prepared(self, db):
        for n in range(16):
            db.query(f"SELECT {n} FROM t WHERE k = ?", (str(n),))
        before = sqlite_heap_bytes()
        for n in range(16, 216):
            db.query(f"SELECT {n} FROM t WHERE k = ?", (str(n),))
        # Past STATEMENT_CACHE_SIZE each new statement evicts one as large: nothing
        # accumulates (the sqlite3 module's default, 128 cached, held ~170 KB more here).
        assert sqlite_heap_bytes() - before < 32 * 1024

    def test_releasing_memory_frees_the_pages_a_scan_read(self, tmp_path):
        writer = Database(tmp_path / "big.sqlite")
        writer.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
        writer.executemany("INSERT INTO t VALUES (?, ?)", [(i, "x" * 1000) for i in range(4000)])
        reader = Database(tmp_path / "big.sqlite")
        try:
            before = sqlite_heap_bytes()
            reader.query_one("SELECT count(*) FROM t WHERE v != ''")
            assert sqlite_heap_bytes() - before > 128 * 1024  # the scan filled the cache
            reader.release_memory()
            assert sqlite_heap_bytes() - before < 16 * 1024
            assert reader.query_one("SELECT count(*) FROM t")[0] == 4000  # still usable
        finally:
            reader.close()
            writer.close()

    def test_releasing_memory_of_an_unused_on_demand_database_opens_nothing(self, tmp_path):
        reader = Database(tmp_path / "never.sqlite", on_demand=True)
        reader.release_memory()
        assert not reader.connected
        reader.close()
