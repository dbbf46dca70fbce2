"""Per-conversation leases, replayable event logs, and versioned agent definitions."""

import asyncio

import pytest

from backend.errors import AgentNotFoundError
from backend.runtime import (
    DEFAULT_AGENT,
    AgentRegistry,
    EventLog,
    InProcessLockStore,
    MessageDelta,
    RunCompleted,
    RunStarted,
)
from backend.runtime.locks import DistributedLockStore, hold
from tests.support.deadlines import WAIT_S, ManualClock

pytestmark = pytest.mark.anyio


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class TestInProcessLockStore:
    async def test_it_implements_the_distributed_interface(self):
        assert isinstance(InProcessLockStore(), DistributedLockStore)

    async def test_only_one_owner_holds_a_key_and_only_the_owner_releases_it(self):
        locks = InProcessLockStore()
        assert await locks.try_acquire("k", "a", 10)
        assert not await locks.try_acquire("k", "b", 10)
        assert await locks.try_acquire("other", "b", 10)  # other keys are independent
        assert not await locks.release("k", "b")
        assert await locks.holder("k") == "a"
        assert await locks.release("k", "a")
        assert await locks.try_acquire("k", "b", 10)

    async def test_an_expired_lease_can_be_taken_over_and_the_old_owner_cannot_refresh(self):
        clock = FakeClock()
        locks = InProcessLockStore(clock)
        await locks.try_acquire("k", "a", 5)
        clock.now = 6
        assert await locks.try_acquire("k", "b", 5)
        assert not await locks.refresh("k", "a", 5)
        assert not await locks.release("k", "a")
        assert await locks.holder("k") == "b"

    async def test_hold_serialises_bodies_on_one_key_and_not_across_keys(self):
        locks = InProcessLockStore()
        inside: dict[str, int] = {"k1": 0, "k2": 0}
        peak: dict[str, int] = {"k1": 0, "k2": 0}

        async def body(key, owner):
            async with hold(locks, key, owner, poll_interval_s=0.001):
                inside[key] += 1
                peak[key] = max(peak[key], inside[key])
                await asyncio.sleep(0.01)
                inside[key] -= 1

        await asyncio.gather(*(body(k, f"{k}-{i}") for k in ("k1", "k2") for i in range(4)))
        assert peak == {"k1": 1, "k2": 1}


class _Unreachable(InProcessLockStore):
    """Refreshes fail ``refresh_failures`` times, then work; releases always fail.

    Its leases run on a clock that stands still: a pause of a loaded machine between two
    renewals cannot expire one, so ``lost`` can only come from the failed renewal itself.
    """

    def __init__(self, refresh_failures: int) -> None:
        super().__init__(clock=ManualClock())
        self.refresh_failures = refresh_failures
        self.refreshed = asyncio.Event()

    async def refresh(self, key: str, owner: str, ttl_s: float) -> bool:
        if self.refresh_failures:
            self.refresh_failures -= 1
            raise ConnectionError("store unreachable")
        self.refreshed.set()
        return await super().refresh(key, owner, ttl_s)

    async def release(self, key: str, owner: str) -> bool:
        raise ConnectionError("store unreachable")


class TestHoldWhenTheStoreIsUnreachable:
    async def test_a_failed_renewal_is_retried_and_a_failed_release_does_not_fail_the_body(
        self,
    ):
        locks = _Unreachable(refresh_failures=1)
        async with hold(locks, "k", "a", ttl_s=1.5) as lease:  # renewed every 0.5 s
            await asyncio.wait_for(locks.refreshed.wait(), WAIT_S)
            assert not lease.lost
        assert await locks.holder("k") == "a"  # not released: it will expire on its own


STARTED = RunStarted(
    user_message_id="u",
    assistant_message_id="a",
    agent_id="assistant",
    agent_version=1,
    model="m",
    endpoint="",
)
COMPLETED = RunCompleted(assistant_message_id="a", text="done")


def delta(text: str) -> MessageDelta:
    return MessageDelta(message_id="a", text=text)


class TestEventLog:
    async def test_sequence_numbers_start_at_one_and_have_no_gaps(self):
        log = EventLog("c")
        events = [log.publish("r", delta(str(i))) for i in range(5)]
        assert [e.seq for e in events] == [1, 2, 3, 4, 5]
        assert [e.seq for e in log.since(2)] == [3, 4, 5]
        assert log.since(5) == []

    async def test_a_late_subscriber_replays_then_follows_live_without_duplicates(self):
        log = EventLog("c")
        log.publish("r", STARTED)
        log.publish("r", delta("a"))
        seen = []
        replayed = asyncio.Event()

        async def follow():
            async for event in log.subscribe(after_seq=1):
                seen.append((event.seq, event.type))
                replayed.set()
                if event.type == "run.completed":
                    return

        task = asyncio.ensure_future(follow())
        await asyncio.wait_for(replayed.wait(), WAIT_S)  # the replay is done: what follows is live
        log.publish("r", delta("b"))
        log.publish("r", COMPLETED)
        await asyncio.wait_for(task, WAIT_S)
        assert seen == [(2, "message.delta"), (3, "message.delta"), (4, "run.completed")]

    async def test_a_sequence_number_from_before_a_restart_replays_everything(self):
        log = EventLog("c")
        log.publish("r", STARTED)
        log.publish("r", COMPLETED)
        assert [e.seq for e in log.since(500)] == [1, 2]
        seen = []
        async for event in log.subscribe(after_seq=500):
            seen.append(event.seq)
            if event.type == "run.completed":
                break
        assert seen == [1, 2]

    async def test_the_buffer_is_bounded_but_keeps_the_current_run(self):
        log = EventLog("c", max_events=3)
        for run in ("r1", "r2"):
            for _ in range(3):
                log.publish(run, delta(""))
        kept = log.since(0)
        assert {e.run_id for e in kept} == {"r2"}
        log2 = EventLog("c", max_events=2)
        for _ in range(5):
            log2.publish("only", delta(""))
        assert len(log2.since(0)) == 5  # never evicts the run in progress

    async def test_closing_ends_subscriptions(self):
        log = EventLog("c")
        log.publish("r", STARTED)
        following = asyncio.Event()

        async def drain():
            seen = []
            async for event in log.subscribe():
                seen.append(event.seq)
                following.set()
            return seen

        task = asyncio.ensure_future(drain())
        await asyncio.wait_for(following.wait(), WAIT_S)  # it is subscribed and waiting for more
        log.close()
        assert await asyncio.wait_for(task, WAIT_S) == [1]


class TestAgentRegistry:
    def test_the_default_agent_is_registered(self):
        registry = AgentRegistry()
        assert registry.get("assistant") == DEFAULT_AGENT

    def test_publishing_adds_a_version_and_old_versions_stay_available(self):
        registry = AgentRegistry()
        v2 = registry.publish("assistant", system_prompt="v2 prompt")
        assert v2.version == 2
        assert registry.get("assistant").system_prompt == "v2 prompt"
        assert registry.get("assistant", 1) == DEFAULT_AGENT

    def test_unknown_agents_and_versions_raise_not_found(self):
        registry = AgentRegistry()
        with pytest.raises(AgentNotFoundError):
            registry.get("nobody")
        with pytest.raises(AgentNotFoundError) as caught:
            registry.get("assistant", 9)
        assert isinstance(caught.value, KeyError)

    def test_a_registered_version_is_immutable(self):
        registry = AgentRegistry()
        from dataclasses import replace

        with pytest.raises(ValueError):
            registry.register(replace(DEFAULT_AGENT, system_prompt="changed"))
