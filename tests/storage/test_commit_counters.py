"""``backend.storage.commit_counters``: many scopes' commit counters asked at once, what the
directory watcher's thread reads before it polls (backend/chats/watch.py)."""

from __future__ import annotations

import pytest

from backend.config import parse_storage
from backend.storage import Database, commit_counters
from backend.storage.postgres import PostgresEngine, PostgresScope


@pytest.fixture
def engine(postgres_url):
    opened = PostgresEngine(parse_storage(postgres_url))
    yield opened
    opened.close()


def scopes(engine, *names):
    opened = [PostgresScope(engine, name) for name in names]
    for scope in opened:
        scope.execute("CREATE TABLE IF NOT EXISTS t (k text)")
    return opened


def test_each_counter_moves_with_every_commit_to_its_scope_and_no_other(engine):
    a, b, c = scopes(engine, "a", "b", "c")
    b_elsewhere = PostgresScope(engine, "b")  # another process's handle on b
    before = commit_counters([a, b, c])
    assert all(isinstance(counter, int) for counter in before)

    b_elsewhere.execute("INSERT INTO t VALUES ('theirs')")
    after_theirs = commit_counters([a, b, c])
    c.execute("INSERT INTO t VALUES ('mine')")  # this handle's own commit moves it too
    after_mine = commit_counters([a, b, c])

    assert after_theirs[0] == before[0] and after_theirs[2] == before[2]
    assert after_theirs[1] != before[1]
    assert after_mine[:2] == after_theirs[:2] and after_mine[2] != after_theirs[2]


def test_all_the_scopes_of_a_database_take_one_connection_and_one_query(engine, monkeypatch):
    many = scopes(engine, *(f"s{n}" for n in range(20)))
    borrowed = []
    real = engine.connection
    monkeypatch.setattr(engine, "connection", lambda **kw: borrowed.append(1) or real(**kw))
    before = [scope.stats.snapshot() for scope in many]

    assert None not in commit_counters(many)

    assert len(borrowed) == 1
    assert all(scope.stats.snapshot() == seen for scope, seen in zip(many, before, strict=True))


def test_what_has_no_counter_is_none_and_nothing_raises(engine, tmp_path):
    [open_scope, closed_scope] = scopes(engine, "open", "closed")
    closed_scope.close()
    sqlite_file = Database(tmp_path / "file.sqlite")
    try:
        counters = commit_counters([sqlite_file, open_scope, closed_scope])
    finally:
        sqlite_file.close()
    assert counters[0] is None and isinstance(counters[1], int) and counters[2] is None
    engine.close()
    assert commit_counters([open_scope]) == [None]
