"""Durability is a setting: ``CHATS_SQLITE_SYNCHRONOUS=normal|full``, WAL in both (issue 14)."""

from __future__ import annotations

import pytest

from backend.config import SQLITE_SYNCHRONOUS_LEVELS, Settings
from backend.storage import Database
from backend.storage.durability import (
    DEFAULT_SYNCHRONOUS,
    apply_storage_settings,
    default_synchronous,
    set_default_synchronous,
)

# PRAGMA synchronous reads back as a number: 1 NORMAL, 2 FULL.
PRAGMA_NUMBERS = {"normal": 1, "full": 2}


@pytest.fixture(autouse=True)
def _restore_default():
    previous = default_synchronous()
    yield
    set_default_synchronous(previous)


def _pragmas(db: Database) -> tuple[str, int]:
    journal = db.query_one("PRAGMA journal_mode")[0]
    synchronous = db.query_one("PRAGMA synchronous")[0]
    return journal, synchronous


class TestTheSynchronousLevel:
    def test_the_default_is_normal_in_wal(self, tmp_path):
        db = Database(tmp_path / "d.sqlite")
        assert DEFAULT_SYNCHRONOUS == "normal" == SQLITE_SYNCHRONOUS_LEVELS[0]
        assert _pragmas(db) == ("wal", PRAGMA_NUMBERS["normal"])
        db.close()

    @pytest.mark.parametrize("level", ["normal", "full"])
    def test_a_database_opened_after_the_setting_is_applied_uses_it_and_keeps_wal(
        self, tmp_path, level
    ):
        settings = Settings.from_env(
            {"CHATS_DATA_DIR": str(tmp_path), "CHATS_SQLITE_SYNCHRONOUS": level}
        )
        apply_storage_settings(settings)
        db = Database(tmp_path / "d.sqlite")
        assert db.synchronous == level
        assert _pragmas(db) == ("wal", PRAGMA_NUMBERS[level])
        db.close()

    def test_an_explicit_level_wins_over_the_process_default(self, tmp_path):
        set_default_synchronous("normal")
        db = Database(tmp_path / "d.sqlite", synchronous="full")
        assert _pragmas(db) == ("wal", PRAGMA_NUMBERS["full"])
        db.close()

    def test_an_unknown_level_is_refused_clearly_by_the_settings_and_the_store(self, tmp_path):
        with pytest.raises(ValueError, match="CHATS_SQLITE_SYNCHRONOUS"):
            Settings.from_env({"CHATS_SQLITE_SYNCHRONOUS": "off"})
        with pytest.raises(ValueError, match="normal, full"):
            set_default_synchronous("off")
        with pytest.raises(ValueError, match="normal, full"):
            Database(tmp_path / "d.sqlite", synchronous="extra")
        assert default_synchronous() == "normal"


class TestDerivedRows:
    """Rows rebuilt after any loss (a message's vector) commit with no fsync, whatever the
    level: they never queue at the disk beside the durable commits."""

    def test_at_full_its_commit_is_unsynced_and_the_level_comes_back_after_it(self, tmp_path):
        db = Database(tmp_path / "d.sqlite", synchronous="full")
        db.execute("CREATE TABLE vectors (v TEXT)")
        with db.derived_transaction():
            db.execute("INSERT INTO vectors VALUES ('v')")
            assert _pragmas(db)[1] == PRAGMA_NUMBERS["normal"]
        assert _pragmas(db) == ("wal", PRAGMA_NUMBERS["full"])
        db.close()
        reopened = Database(tmp_path / "d.sqlite")
        assert reopened.query_one("SELECT v FROM vectors")[0] == "v"
        reopened.close()

    def test_a_failed_one_rolls_back_and_still_gives_the_level_back(self, db_at_full):
        with pytest.raises(RuntimeError), db_at_full.derived_transaction():
            db_at_full.execute("INSERT INTO vectors VALUES ('v')")
            raise RuntimeError("the embedder failed")
        assert db_at_full.query_one("SELECT count(*) FROM vectors")[0] == 0
        assert _pragmas(db_at_full)[1] == PRAGMA_NUMBERS["full"]

    def test_inside_a_durable_transaction_it_joins_it_at_its_level(self, db_at_full):
        with pytest.raises(RuntimeError), db_at_full.transaction():
            db_at_full.execute("INSERT INTO vectors VALUES ('message')")
            with db_at_full.derived_transaction():
                db_at_full.execute("INSERT INTO vectors VALUES ('vector')")
                assert _pragmas(db_at_full)[1] == PRAGMA_NUMBERS["full"]
            raise RuntimeError("the outer write failed")
        assert db_at_full.query_one("SELECT count(*) FROM vectors")[0] == 0


@pytest.fixture
def db_at_full(tmp_path):
    db = Database(tmp_path / "d.sqlite", synchronous="full")
    db.execute("CREATE TABLE vectors (v TEXT)")
    yield db
    db.close()
