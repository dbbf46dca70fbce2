"""A small table in a fresh file: what most storage tests write into."""

import pytest

from backend.storage import Database


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "t.sqlite")
    database.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
    yield database
    database.close()
