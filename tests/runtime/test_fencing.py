"""Fencing tokens in the chat file (issue 14): a claim must be newer than every earlier one,
and a run may write only while it still runs under the newest claim.

The lease store hands out the tokens (``RedisLockStore``: see ``test_redis_locks.py``); the
chat file is where they are checked, inside the transaction of each write, so the check and
the write cannot be separated by another process.
"""

from __future__ import annotations

import pytest

from backend.errors import LeaseLostError
from backend.runtime.records import RunStatus
from backend.runtime.store import RuntimeStore
from tests.runtime.helpers import enqueue


def _claim(store: RuntimeStore, fence: int | None):
    return store.claim_next_run("c1", agent_id="assistant", agent_version=1, now=2, fence=fence)


class TestClaims:
    def test_a_claim_records_its_token_on_the_run_and_the_conversation(self, store):
        enqueue(store, "r1")
        run = _claim(store, 7)
        assert run.fence == 7
        assert store.fence_of("c1") == 7

    @pytest.mark.parametrize("token", [3, 7])
    def test_a_claim_with_a_token_not_newer_than_the_last_is_refused_and_changes_nothing(
        self, store, token
    ):
        enqueue(store, "r1")
        store.finish_run(_claim(store, 7).id, RunStatus.COMPLETED, now=3)
        enqueue(store, "r2")
        with pytest.raises(LeaseLostError):
            _claim(store, token)
        assert store.load_run("r2").status == RunStatus.QUEUED
        assert store.fence_of("c1") == 7
        assert _claim(store, 8).id == "r2"

    def test_a_claim_without_a_token_leaves_the_fence_alone(self, store):
        enqueue(store, "r1")
        run = _claim(store, None)
        assert run.fence is None
        assert store.fence_of("c1") == 0


class TestCheckingTheFence:
    def test_a_run_under_the_newest_claim_passes(self, store):
        enqueue(store, "r1")
        store.check_fence(_claim(store, 4))

    def test_a_run_under_an_older_token_than_the_conversations_is_refused(self, store):
        enqueue(store, "r1")
        run = _claim(store, 4)
        store.db.execute("UPDATE runtime_conversation SET fence = 5")  # a newer holder claimed
        with pytest.raises(LeaseLostError):
            store.check_fence(run)

    def test_a_run_that_was_ended_meanwhile_is_refused_with_or_without_a_token(self, store):
        for run_id, token in (("r1", 4), ("r2", None)):
            enqueue(store, run_id)
            run = _claim(store, token)
            store.finish_run(run_id, RunStatus.FAILED, now=3, error="taken over")
            with pytest.raises(LeaseLostError):
                store.check_fence(run)
