"""Run leases in Redis, shared by every worker process, with fencing (issue 14).

A real ``redis-server`` runs on a free loopback port for this module. The fencing rule: a
holder whose lease expired (its heartbeat stalled) must not commit over the run that
replaced it, whatever its process is doing.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid

import pytest

from backend.chats import Chats
from backend.runtime import InProcessLockStore, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR, LEASE_LOST_ERROR
from backend.runtime.hosting import lock_store_from_settings
from backend.runtime.locks import (
    DistributedLockStore,
    FencedLockStore,
    conversation_lock_key,
    hold,
)
from backend.runtime.pg_store import runtime_store_for
from backend.runtime.redis_locks import RedisLockStore
from tests.conftest import ROOT
from tests.runtime.helpers import events_until_done, make_runtime, settings, texts
from tests.runtime.processes import two_processes_send
from tests.support.deadlines import CHILD_START_S, MARGIN_S, until
from tests.support.scripted_model import Hold, ScriptedModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def other_worker_chats(tmp_path):
    """A second directory on the ``chats`` fixture's folder, as another worker opens it."""
    with Chats(tmp_path / "data", "user1") as directory:
        yield directory


class TestRedisLockStore:
    async def test_it_is_a_fenced_distributed_lock_store(self, locks):
        assert isinstance(locks, DistributedLockStore)
        assert isinstance(locks, FencedLockStore)
        assert not isinstance(InProcessLockStore(), FencedLockStore)

    async def test_only_one_owner_holds_a_key_and_only_the_owner_releases_it(self, locks):
        assert await locks.try_acquire("k", "a", 30)
        assert not await locks.try_acquire("k", "b", 30)
        assert await locks.try_acquire("k", "a", 30)  # the owner renews
        assert not await locks.release("k", "b")
        assert not await locks.refresh("k", "b", 30)
        assert await locks.holder("k") == "a"
        assert await locks.release("k", "a")
        assert await locks.holder("k") is None

    async def test_an_unrefreshed_lease_expires_and_the_next_owner_gets_a_larger_token(self, locks):
        assert await locks.try_acquire("k", "a", 30)
        first = await locks.fencing_token("k", "a")  # read while the lease surely holds
        assert await locks.refresh("k", "a", 0.2)  # then left to run out

        async def expired() -> bool:
            return await locks.holder("k") is None

        await until(expired)
        assert not await locks.refresh("k", "a", 30)  # too late: it is nobody's now
        assert await locks.try_acquire("k", "b", 30)
        second = await locks.fencing_token("k", "b")
        assert first is not None and second is not None and second > first

    async def test_renewing_keeps_the_token_and_every_new_acquisition_is_larger(self, locks):
        tokens = []
        for owner in ("a", "b", "c"):
            assert await locks.try_acquire("k", owner, 30)
            assert await locks.try_acquire("k", owner, 30)
            tokens.append(await locks.fencing_token("k", owner))
            assert await locks.release("k", owner)
        assert tokens == sorted(set(tokens))

    async def test_advancing_the_fence_puts_the_next_token_past_the_floor(self, locks):
        await locks.advance_fence("k", 1_000)
        assert await locks.try_acquire("k", "a", 30)
        assert await locks.fencing_token("k", "a") == 1_001

    async def test_hold_yields_the_token_and_marks_a_lease_taken_over_as_lost(self, locks):
        # A lease no pause of a loaded machine outlasts before the token is read.
        async with hold(locks, "k", "a", ttl_s=MARGIN_S) as lease:
            assert lease.token == await locks.fencing_token("k", "a")
            await locks.release("k", "a")  # as if it expired
            assert await locks.try_acquire("k", "b", 30)

            async def lost() -> bool:
                return lease.lost

            await until(lost)
        assert await locks.holder("k") == "b"  # leaving did not release b's lease


class _PausableHeartbeat(RedisLockStore):
    """A store whose refreshes wait while ``paused`` (a stalled holder, for the test)."""

    paused = False
    resumed: asyncio.Event

    async def refresh(self, key: str, owner: str, ttl_s: float) -> bool:
        if self.paused:
            await self.resumed.wait()
        return await super().refresh(key, owner, ttl_s)


class TestAHolderWhoseLeaseExpiredMidReply:
    async def test_its_late_commit_is_refused_and_the_history_holds_the_new_holders_turn(
        self, tmp_path, redis_url, chats, other_worker_chats
    ):
        prefix = f"test:{uuid.uuid4().hex}:"
        stalled = _PausableHeartbeat.from_url(redis_url, prefix=prefix)
        stalled.resumed = asyncio.Event()
        other = RedisLockStore.from_url(redis_url, prefix=prefix)
        chats_a, chats_b = chats, other_worker_chats  # two workers on one data folder
        held = Hold()
        runtime_a = make_runtime(
            tmp_path,
            chats_a,
            ScriptedModel(["partial ", held, "late words from A"]),
            lock_store=stalled,
            lease_ttl_s=MARGIN_S,  # no pause of a loaded machine expires it before the stall
            checkpoint_interval_s=0,
        )
        runtime_b = make_runtime(
            tmp_path, chats_b, ScriptedModel("answer from B"), lock_store=other
        )
        try:
            chat_id = chats_a.create_chat().id
            first = await runtime_a.send_message(chat_id, "question")
            a_sees_its_end = asyncio.ensure_future(
                events_until_done(runtime_a, chat_id, first.run_id)
            )
            await held.reached()
            stalled.paused = True  # A's heartbeat stops renewing: its lease runs out

            async def expired() -> bool:
                return await other.holder(conversation_lock_key(chat_id)) is None

            await until(expired)
            second = await runtime_b.regenerate(chat_id, first.assistant_message_id)
            await runtime_b.wait_idle(chat_id)

            stalled.resumed.set()
            held.release()  # A wakes up and tries to finish its reply
            a_events = await a_sees_its_end
            await runtime_a.wait_idle(chat_id)
        finally:
            held.release()
            stalled.resumed.set()
            await runtime_a.aclose()
            await runtime_b.aclose()
            await stalled.aclose()
            await other.aclose()
        chat = chats_b.get_chat(chat_id)
        store = runtime_store_for(chat.database)
        lost, replaced = store.load_run(first.run_id), store.load_run(second.run_id)
        assert (lost.status, lost.error) == (RunStatus.FAILED, INTERRUPTED_ERROR)
        assert replaced.status == RunStatus.COMPLETED
        assert replaced.fence is not None and lost.fence is not None
        assert replaced.fence > lost.fence
        assert texts(chat.session) == [("user", "question"), ("assistant", "answer from B")]
        stale = chat.session.get_message(first.assistant_message_id)
        assert [p["text"] for p in stale["parts"]] == ["partial "]  # only its checkpoint
        assert stale["metadata"]["status"] == "failed"
        assert a_events[-1].type == "run.failed"
        assert a_events[-1].data["error"] == LEASE_LOST_ERROR


class TestAClaimUnderAnOlderTokenThanTheChatRemembers:
    async def test_the_counter_is_advanced_and_the_run_completes(self, tmp_path, locks):
        """Redis restarted empty: its counter is behind the token stored in the chat file."""
        chats = Chats(tmp_path / "data", "user1")
        runtime = make_runtime(tmp_path, chats, ScriptedModel("one", "two"), lock_store=locks)
        try:
            chat_id = chats.create_chat().id
            await runtime.send_message(chat_id, "first")
            await runtime.wait_idle(chat_id)
            store = runtime_store_for(chats.get_chat(chat_id).database)
            remembered = store.fence_of(chat_id)
            await locks._client.delete(locks._counter(conversation_lock_key(chat_id)))
            ticket = await runtime.send_message(chat_id, "second")
            await runtime.wait_idle(chat_id)
            run = store.load_run(ticket.run_id)
        finally:
            await runtime.aclose()
            chats.close()
        assert run.status == RunStatus.COMPLETED
        assert run.fence is not None and run.fence > remembered


class TestTwoProcessesSharingAChatThroughRedis:
    async def test_every_run_completes_in_order_one_at_a_time(self, tmp_path, chats, redis_url):
        runs = await two_processes_send(tmp_path, chats, redis_url=redis_url)
        fences = [run.fence for run in runs]
        assert None not in fences and fences == sorted(set(fences))  # each a newer lease


class TestLockStoreFromSettings:
    def test_redis_when_the_url_is_set_and_in_process_otherwise(self, tmp_path, redis_url):
        assert isinstance(lock_store_from_settings(settings(tmp_path)), InProcessLockStore)
        store = lock_store_from_settings(settings(tmp_path, REFLEX_REDIS_URL=redis_url))
        assert isinstance(store, RedisLockStore)

    def test_the_backend_imports_and_runs_without_the_redis_package(self, tmp_path):
        code = (
            "import sys; sys.modules['redis'] = None\n"
            "from backend.config import Settings\n"
            "from backend.runtime import ChatRuntime, InProcessLockStore\n"
            "from backend.runtime.hosting import lock_store_from_settings\n"
            f"s = Settings.from_env({{'CHATS_DATA_DIR': {str(tmp_path)!r}}})\n"
            "assert isinstance(lock_store_from_settings(s), InProcessLockStore)\n"
        )
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=CHILD_START_S)
