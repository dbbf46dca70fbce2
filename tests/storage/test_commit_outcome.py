"""A commit whose reply is lost with its connection is resolved, never retried blindly.

The connection is cut at ``COMMIT`` time by a relay that loses either the request (the server
never committed) or the reply (it did), or by ``pg_terminate_backend`` from another
connection; each time the app is told the truth: success when the write is there, and an
error saying "aborted" or "unknown" otherwise. A compare-and-set whose reply was lost reports
success (it is not run again, so it cannot fail against its own first write).
"""

from __future__ import annotations

import psycopg
import pytest

from backend.config import parse_storage
from backend.storage.postgres import (
    CommitAbortedError,
    CommitOutcomeUnknownError,
    CommittedReplyLostError,
    PostgresEngine,
    PostgresScope,
    StorageUnavailableError,
)
from backend.storage.postgres.outcome import Witness, judge
from tests.storage.cutting_proxy import CuttingProxy
from tests.support.deadlines import SHORT_RESOLVE_S, WAIT_MS


class StaleVersionError(Exception):
    """The compare-and-set below lost: someone else moved the version first."""


@pytest.fixture
def proxy(postgres_url):
    relay = CuttingProxy(postgres_url)
    yield relay
    relay.close()


@pytest.fixture
def scope(proxy):
    # One connection in the pool: the one a transaction pins is the only one the relay cuts;
    # the resolution opens a new one, which passes.
    engine = PostgresEngine(parse_storage(proxy.url), pool_max=1)
    opened = PostgresScope(engine, "/d/u1/chats/abc.g1.sqlite")
    opened.execute("CREATE TABLE state (k text PRIMARY KEY, version bigint, v text)")
    opened.execute("INSERT INTO state VALUES ('run', 1, 'queued')")
    yield opened
    opened.close()
    engine.close()


@pytest.fixture
def admin(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        yield conn


def compare_and_set(scope, expected: int, value: str) -> None:
    if (
        scope.write(
            "UPDATE state SET version = version + 1, v = ? WHERE k = 'run' AND version = ?",
            (value, expected),
        )
        != 1
    ):
        raise StaleVersionError(f"version is no longer {expected}")


def state(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        return conn.execute("SELECT version, v FROM state").fetchall()


class TestReplyLostAfterTheServerCommitted:
    def test_a_compare_and_set_reports_success_once_and_is_not_applied_twice(
        self, scope, proxy, postgres_url
    ):
        committed_hooks = []
        with scope.transaction():
            scope.after_commit(lambda: committed_hooks.append("ran"))
            compare_and_set(scope, 1, "running")
            proxy.lose_replies()
        assert proxy.lost_bytes > 0  # the COMMIT's answer was really lost
        assert committed_hooks == ["ran"]
        assert scope.engine.lost_commits == {"committed": 1}  # counted for operators
        assert state(postgres_url) == [(2, "running")]
        compare_and_set(scope, 2, "done")  # the scope carries on, on a new connection
        assert state(postgres_url) == [(3, "done")]

    def test_a_lone_write_says_it_committed_though_its_rows_were_lost(
        self, scope, proxy, postgres_url
    ):
        proxy.lose_replies()
        with pytest.raises(CommittedReplyLostError, match="it committed, but its reply was lost"):
            scope.execute("UPDATE state SET v = 'lone' RETURNING version")
        assert state(postgres_url) == [(1, "lone")]


class TestCommitThatNeverReachedTheServer:
    def test_the_transaction_left_open_there_is_ended_and_reported_aborted(
        self, scope, proxy, postgres_url
    ):
        rolled_back = []
        with (
            pytest.raises(CommitAbortedError, match="it did not commit; nothing was written"),
            scope.transaction(),
        ):
            scope.on_rollback(lambda: rolled_back.append("ran"))
            compare_and_set(scope, 1, "running")
            proxy.lose_requests()
        assert rolled_back == ["ran"]
        assert state(postgres_url) == [(1, "queued")]
        # The server-side orphan held the scope's write lock: it was ended, so this does not
        # wait out lock_timeout.
        compare_and_set(scope, 1, "running")
        assert state(postgres_url) == [(2, "running")]

    def test_an_aborted_commit_is_a_storage_unavailable_error_without_the_password(
        self, scope, proxy, postgres_url
    ):
        password = parse_storage(postgres_url).url.split(":")[2].split("@")[0]
        with pytest.raises(StorageUnavailableError) as caught, scope.transaction():
            compare_and_set(scope, 1, "running")
            proxy.lose_requests()
        assert caught.value.outcome == "aborted"
        assert password not in str(caught.value)


class TestBackendTerminatedAtCommitTime:
    def test_a_backend_killed_before_commit_is_reported_aborted(self, scope, admin, postgres_url):
        with pytest.raises(CommitAbortedError), scope.transaction():
            compare_and_set(scope, 1, "running")
            pid = scope.query_one("SELECT pg_backend_pid()")[0]
            # Waits until the backend is gone (PostgreSQL 14+), so COMMIT meets a dead socket.
            ended = admin.execute("SELECT pg_terminate_backend(%s, %s)", (pid, WAIT_MS))
            assert ended.fetchone()[0] is True
        assert state(postgres_url) == [(1, "queued")]


class TestNoPrimaryToAsk:
    def test_the_outcome_is_unknown_not_a_false_abort(self, scope, proxy, postgres_url):
        scope.resolve_wait_s = SHORT_RESOLVE_S
        proxy.refuse_new()
        with (
            pytest.raises(CommitOutcomeUnknownError, match="whether it committed cannot be told"),
            scope.transaction(),
        ):
            compare_and_set(scope, 1, "running")
            proxy.lose_replies()
        # It had committed: "unknown" was the truth a caller could act on, "aborted" a lie.
        assert state(postgres_url) == [(2, "running")]
        proxy.refuse_new(False)
        compare_and_set(scope, 2, "done")

    def test_a_lone_write_whose_request_was_lost_is_unknown_and_not_sent_again(
        self, scope, proxy, postgres_url
    ):
        proxy.lose_requests()
        with pytest.raises(CommitOutcomeUnknownError):
            scope.execute("UPDATE state SET version = version + 1")
        assert state(postgres_url) == [(1, "queued")]


class TestJudgement:
    """What each answer of the (possibly new) primary means (outcome.judge)."""

    here = "2026-12-05 05:00"
    elsewhere = "2026-12-05 05:01"
    mine = Witness(token=7, backend_pid=1, xid=100, version=5, started=here)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("row", "outcome"),
        [
            ((7, 9, elsewhere, "committed"), "committed"),  # our token: ours, on any server
            ((3, 9, here, "committed"), "committed"),  # same server run: ids are unique
            ((3, 9, here, "aborted"), "aborted"),
            ((3, 9, here, "in progress"), None),  # ask again (after ending the orphan)
            ((3, 9, elsewhere, "aborted"), "aborted"),
            ((3, 4, elsewhere, "future"), "aborted"),  # the new primary never saw our id
            ((3, 4, elsewhere, "committed"), "aborted"),  # id reused: the version never got ours
            ((3, 9, elsewhere, "committed"), "unknown"),  # reused, or ours then overwritten
            ((3, 9, here, None), "unknown"),  # too old to look up
            (None, "unknown"),  # the scope's row is gone
        ],
    )
    def test_each_answer(self, row, outcome):
        assert judge(self.mine, row) == outcome

    def test_without_the_first_reply_only_the_token_can_tell(self):
        bare = Witness(token=7, backend_pid=1)
        assert judge(bare, (7, 9, self.here, None)) == "committed"
        assert judge(bare, (3, 9, self.here, None)) == "unknown"
