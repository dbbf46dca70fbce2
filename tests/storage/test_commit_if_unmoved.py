"""``PostgresScope.commit_if_unmoved``: a whole write transaction in one round trip, written
only while nobody else committed to the scope since the version its caller trusts (what a
conversation's append is on PostgreSQL, backend/sessions/pg_writes.py)."""

from __future__ import annotations

import pytest

from backend.config import parse_storage
from backend.errors import StorageError
from backend.storage.postgres import (
    GUARDED_BUMP,
    CommitOutcomeUnknownError,
    CommittedReplyLostError,
    PostgresEngine,
    PostgresScope,
)
from tests.storage.cutting_proxy import CuttingProxy
from tests.support.deadlines import SHORT_RESOLVE_S

INSERT = GUARDED_BUMP + (
    ", k AS (INSERT INTO t (k, v) SELECT ?, ? FROM bump RETURNING 1)"
    " SELECT bump.*, (SELECT count(*) FROM k) AS written FROM bump"
)


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


class TestCommitIfUnmoved:
    def test_it_commits_the_statement_as_its_own_write_and_others_see_it_move(self, engine, scope):
        other = PostgresScope(engine, "test")
        seen_by_other = other.data_version()
        version = scope.data_version()
        row = scope.commit_if_unmoved(INSERT, ("a", "1"), version)
        assert row is not None and row["written"] == 1
        assert values(other) == [("a", "1")]
        assert scope.data_version() == version  # its own commit
        assert other.data_version() == seen_by_other + 1

    def test_after_someone_else_committed_it_writes_nothing(self, engine, scope):
        version = scope.data_version()
        PostgresScope(engine, "test").execute("INSERT INTO t VALUES ('theirs', '0')")
        assert scope.commit_if_unmoved(INSERT, ("a", "1"), version) is None
        assert values(scope) == [("theirs", "0")]
        caught_up = scope.data_version()
        assert caught_up != version
        assert scope.commit_if_unmoved(INSERT, ("a", "1"), caught_up) is not None
        assert values(scope) == [("a", "1"), ("theirs", "0")]

    def test_it_finishes_the_transaction_it_begins_and_the_exit_runs_the_hooks(self, scope):
        seen, version = [], scope.data_version()
        with scope.transaction():
            scope.after_commit(lambda: seen.append("committed"))
            scope.on_rollback(lambda: seen.append("rolled back"))
            assert scope.commit_if_unmoved(INSERT, ("a", "1"), version)
            assert values(scope) == [("a", "1")]  # a read after it sees the commit
            with pytest.raises(StorageError, match="committed with its last write"):
                scope.execute("INSERT INTO t VALUES ('b', '2')")
        assert seen == ["committed"] and not scope.in_transaction
        assert values(scope) == [("a", "1")]

    def test_a_failure_after_it_still_runs_the_after_commit_hooks(self, scope):
        seen, version = [], scope.data_version()
        with pytest.raises(RuntimeError), scope.transaction():
            scope.after_commit(lambda: seen.append("committed"))
            scope.commit_if_unmoved(INSERT, ("a", "1"), version)
            raise RuntimeError("after the commit")
        assert seen == ["committed"] and values(scope) == [("a", "1")]

    def test_when_moved_the_transaction_goes_on_the_usual_way(self, engine, scope):
        version = scope.data_version()
        PostgresScope(engine, "test").execute("INSERT INTO t VALUES ('theirs', '0')")
        with pytest.raises(RuntimeError), scope.transaction():
            assert scope.commit_if_unmoved(INSERT, ("a", "1"), version) is None
            scope.execute("INSERT INTO t VALUES ('b', '2')")
            raise RuntimeError("roll it back")
        assert values(scope) == [("theirs", "0")]
        with scope.transaction():
            assert scope.commit_if_unmoved(INSERT, ("a", "1"), version) is None
            scope.execute("INSERT INTO t VALUES ('b', '2')")
        assert values(scope) == [("b", "2"), ("theirs", "0")]

    def test_it_cannot_join_a_transaction_that_already_began(self, scope):
        version = scope.data_version()
        with scope.transaction():
            scope.execute("INSERT INTO t VALUES ('b', '2')")
            with pytest.raises(StorageError, match="must begin its transaction"):
                scope.commit_if_unmoved(INSERT, ("a", "1"), version)


@pytest.fixture
def cut_scope(postgres_url):
    """A scope reaching the server through a relay that can lose requests or replies (one
    pooled connection: the resolution of a lost commit opens a new one, which passes)."""
    relay = CuttingProxy(postgres_url)
    engine = PostgresEngine(parse_storage(relay.url), pool_max=1)
    opened = PostgresScope(engine, "test")
    opened.execute("CREATE TABLE t (k text PRIMARY KEY, v text)")
    yield relay, opened
    opened.close()
    engine.close()
    relay.close()


class TestAConnectionLostOnTheWay:
    """Resolved as a lone write's lost commit is (backend/storage/postgres/outcome.py)."""

    def test_after_the_server_committed_the_error_says_so_and_the_row_is_there(self, cut_scope):
        relay, scope = cut_scope
        version = scope.data_version()
        relay.lose_replies()
        with pytest.raises(CommittedReplyLostError):
            scope.commit_if_unmoved(INSERT, ("a", "1"), version)
        assert relay.lost_bytes > 0
        assert values(scope) == [("a", "1")]

    def test_a_request_that_never_arrived_is_not_sent_again(self, cut_scope):
        relay, scope = cut_scope
        scope.resolve_wait_s = SHORT_RESOLVE_S
        version = scope.data_version()
        relay.lose_requests()
        with pytest.raises(CommitOutcomeUnknownError):
            scope.commit_if_unmoved(INSERT, ("a", "1"), version)
        assert values(scope) == []
