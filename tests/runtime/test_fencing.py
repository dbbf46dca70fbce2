"""Fencing tokens in the chat's scope (issues 14, 26): a claim must be newer than every
earlier one, and a run may write only while it still runs under the newest claim.

The lease store hands out the tokens (``RedisLockStore``: see ``test_redis_locks.py``); the
chat's scope is where they are checked, inside the transaction of each write, so the check and
the write cannot be separated by another process or another machine. Every test here runs on
both engines (the ``store`` fixture): on SQLite the check reads under ``BEGIN IMMEDIATE``, on
PostgreSQL it is a locking update of the conversation's fence row (``backend.runtime.pg_store``).
"""

from __future__ import annotations

import threading

import pytest

from backend.config import parse_storage
from backend.errors import LeaseLostError, RunNotFoundError
from backend.runtime import SessionStateHandle, SessionStateStore
from backend.runtime.locks import FencedLockStore, conversation_lock_key
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.records import RunRecord, RunStatus
from backend.runtime.store import RuntimeStore
from tests.runtime.conftest import recorded_conversation
from tests.runtime.helpers import enqueue
from tests.support.deadlines import until
from tests.support.runtime_scopes import file_scope


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

    def test_a_run_that_is_gone_is_not_found(self, store):
        enqueue(store, "r1")
        run = _claim(store, 4)
        store.db.execute("DELETE FROM runtime_runs")
        with pytest.raises(RunNotFoundError):
            store.check_fence(run)


def _commit(store: RuntimeStore, run: RunRecord, handle: SessionStateHandle, now: int) -> None:
    """What a turn's commit writes of the runtime's tables (``TurnWriter.commit`` less the
    message): the fence check first, in the same transaction."""
    with store.db.transaction():
        store.check_fence(run)
        handle.commit()
        store.finish_run(run.id, RunStatus.COMPLETED, now=now)
        store.set_last_run(run.conversation_id, run.id, now)


async def _lease(locks: FencedLockStore, owner: str) -> int:
    assert await locks.try_acquire(conversation_lock_key("c1"), owner, 30)
    token = await locks.fencing_token(conversation_lock_key("c1"), owner)
    assert token is not None
    return token


@pytest.mark.anyio
class TestAStaleOwnerCannotCommit:
    """Two nodes, each on its own connection to the chat's scope, share leases in Redis.

    Node A claims a run and stalls past its lease; node B acquires the lease with a newer
    token and takes the conversation over (ends A's run as interrupted, claims the next). When
    A wakes up, its commit is refused with ``LeaseLostError`` and nothing of it is stored.
    """

    async def test_the_first_owners_commit_is_refused_and_nothing_of_it_is_stored(
        self, tmp_path, storage, store, locks
    ):
        key = conversation_lock_key("c1")
        with (
            file_scope(storage, tmp_path / "chat.sqlite") as scope_a,
            file_scope(storage, tmp_path / "chat.sqlite") as scope_b,
        ):
            node_a, node_b = runtime_store_for(scope_a), runtime_store_for(scope_b)
            enqueue(node_a, "r1")
            token_a = await _lease(locks, "node-a")
            run_a = _claim(node_a, token_a)
            handle_a = SessionStateStore(node_a, clock=lambda: 4).open("c1", None)
            handle_a.propose(set_values={"written_by": "a"})

            assert await locks.refresh(key, "node-a", 0.2)  # then A stalls: no more renewals

            async def expired() -> bool:
                return await locks.holder(key) is None

            await until(expired)
            token_b = await _lease(locks, "node-b")
            assert token_b > token_a
            assert node_b.finish_run("r1", RunStatus.FAILED, now=3, error="interrupted")
            enqueue(node_b, "r2", now=3)
            run_b = _claim(node_b, token_b)

            with pytest.raises(LeaseLostError) as refused:
                _commit(node_a, run_a, handle_a, now=5)

            assert refused.value.token == token_a
            assert node_b.load_run("r1").status == RunStatus.FAILED
            assert node_b.load_run("r2") == run_b  # still running, untouched
            state = node_b.load_state("c1")
            assert (state.version, state.data) == (0, {})
            assert node_b.load_conversation("c1").last_run_id is None
            assert node_b.fence_of("c1") == token_b

    async def test_the_newer_owners_commit_goes_through(self, tmp_path, storage, store, locks):
        enqueue(store, "r1")
        run = _claim(store, await _lease(locks, "node-a"))
        handle = SessionStateStore(store, clock=lambda: 4).open("c1", None)
        handle.propose(set_values={"written_by": "a"})
        _commit(store, run, handle, now=5)
        assert store.load_run("r1").status == RunStatus.COMPLETED
        assert store.load_state("c1").data == {"written_by": "a"}
        assert store.load_conversation("c1").last_run_id == "r1"


@pytest.mark.anyio
async def test_on_postgresql_a_takeover_waits_for_a_commit_that_passed_its_fence(
    tmp_path, postgres_url
):
    """The check and the commit are one step for another machine too: node B's takeover,
    started after node A's commit checked its fence, waits on A's locks (seen waiting in
    ``pg_stat_activity``) and then finds the run already completed, so it ends nothing."""
    import psycopg

    storage = parse_storage(postgres_url)
    with (
        file_scope(storage, tmp_path / "chat.sqlite") as scope_a,
        file_scope(storage, tmp_path / "chat.sqlite") as scope_b,
        psycopg.connect(postgres_url, autocommit=True) as observer,
    ):
        node_a = recorded_conversation(runtime_store_for(scope_a))
        node_b = runtime_store_for(scope_b)
        enqueue(node_a, "r1")
        run = _claim(node_a, 1)
        ended_by_b: list[bool] = []
        takeover = threading.Thread(
            target=lambda: ended_by_b.append(
                node_b.finish_run("r1", RunStatus.FAILED, now=3, error="interrupted")
            )
        )

        def b_waits_on_a_lock() -> bool:
            row = observer.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()"
            ).fetchone()
            return row is not None and row[0] > 0

        with node_a.db.transaction():
            node_a.check_fence(run)
            takeover.start()
            await until(b_waits_on_a_lock)
            node_a.finish_run("r1", RunStatus.COMPLETED, now=4)
        takeover.join()
        assert ended_by_b == [False]
        assert node_b.load_run("r1").status == RunStatus.COMPLETED
