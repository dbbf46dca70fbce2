"""A run's events reach a watcher in the order the run went, each once: queued, started, end.

A tab advances its conversation view from these events alone (``chatsapp.live.run_pump``,
``backend.transcript.extended_window`` / ``updated_window``), so an event out of place costs
more than a read: a ``run.started`` before ``run.queued`` leaves the queued counter at one, a
``run.completed`` before it names a reply the view does not show yet, and a ``run.failed``
for a run still queued shows "The model failed." beside a reply that then completes.

Three interleavings a busy machine produces, each forced here with a gate, not by luck:

* a run is claimable once its transaction commits, and the worker may already be awake (a
  watcher's look at the runs follows the new run and wakes it) while the enqueue has still
  to publish ``run.queued`` (the fresh-clone flake of
  ``tests/ui/test_view_from_run_events.py``: the window computed from the events was None);
* a look at the runs taken just before an enqueue, finished just after it, finds the new run
  followed but not open, and must not announce it ended;
* a look that saw a run open, finished after this runtime ended the run, must not follow it
  again (its end would be announced a second time, without the reply).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from backend.runtime import ChatRuntime, PublishedRunEvent, RunCompleted, RunTicket, run_queue
from backend.runtime.locks import conversation_lock_key
from backend.runtime.run_queue import RunQueue
from backend.runtime.store import RuntimeStore
from tests.support.deadlines import WAIT_S, until
from tests.support.run_events import watching
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio


class Gate:
    """Stops the first call of a blocking function (in its worker thread) until opened."""

    def __init__(self) -> None:
        self._reached = threading.Event()
        self._opened = threading.Event()
        self._first = threading.Lock()

    def stop_here(self) -> None:
        if not self._first.acquire(blocking=False):
            return  # a later call passes
        self._reached.set()
        assert self._opened.wait(WAIT_S), "the test never opened the gate"

    async def reached(self) -> None:
        await until(self._reached.is_set, what="a call reaching the gate")

    def open(self) -> None:
        self._opened.set()


async def caught_up(runtime: ChatRuntime, chat_id: str, events: list[PublishedRunEvent]) -> None:
    """Once the watcher's look at the runs is over (it replays the chat's earlier turn) and
    the work it may have woken is done: every event published so far has reached ``events``."""
    await until(lambda: bool(events), what="the watcher replaying")
    await runtime.wait_idle(chat_id)
    last = (await runtime.run_status(chat_id)).last_seq
    await until(lambda: bool(events) and events[-1].seq == last, what="the watcher catching up")


def story(events: list[PublishedRunEvent], run_id: str) -> list[str]:
    """The run's events as their types, text deltas left out."""
    return [e.type for e in events if e.run_id == run_id and e.type != "message.delta"]


def replies(events: list[PublishedRunEvent], run_id: str) -> list[object]:
    """What each ``run.completed`` of the run carried as the stored reply."""
    return [
        e.payload.written
        for e in events
        if e.run_id == run_id and isinstance(e.payload, RunCompleted)
    ]


async def answered_once(runtime: ChatRuntime, chat_id: str) -> RunTicket:
    """A first turn: the chat's file exists and the chat is open, as once a tab has used it."""
    ticket = await runtime.send_message(chat_id, "hello")
    await runtime.wait_idle(chat_id)
    return ticket


def gate_open_runs(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """The next look at a chat's open runs reads, then waits at a gate before it returns."""
    gate = Gate()
    real = RuntimeStore.open_runs

    def open_runs(self: RuntimeStore, *args: Any, **kwargs: Any) -> Any:
        runs = real(self, *args, **kwargs)
        gate.stop_here()
        return runs

    monkeypatch.setattr(RuntimeStore, "open_runs", open_runs)
    return gate


async def take_lease(runtime: ChatRuntime, chat_id: str) -> None:
    """The chat's lease held elsewhere (another process's worker busy with the chat)."""
    assert await runtime.locks.try_acquire(conversation_lock_key(chat_id), "elsewhere", WAIT_S)


async def give_lease_back(runtime: ChatRuntime, chat_id: str) -> None:
    await runtime.locks.release(conversation_lock_key(chat_id), "elsewhere")


class TestARunsEventsComeInTheOrderItWent:
    async def test_a_run_claimed_before_its_enqueue_returned_is_still_announced_queued_first(
        self, chats, open_runtime, monkeypatch
    ):
        runtime = open_runtime(ScriptedModel(default="An answer."))
        chat_id = chats.create_chat().id
        first = await answered_once(runtime, chat_id)

        # The enqueue's thread is held right after its transaction committed (a busy machine
        # descheduling it there): the run is in the table, run.queued not yet published.
        committed = Gate()
        real_written_now = run_queue.written_now

        def written_now(*args: Any, **kwargs: Any) -> Any:
            committed.stop_here()
            return real_written_now(*args, **kwargs)

        monkeypatch.setattr(run_queue, "written_now", written_now)
        # Whether the worker, once awake, had to wait for the enqueue to publish.
        waited: list[bool] = []
        real_claim = RunQueue._claim_and_execute

        async def claim_and_execute(queue: RunQueue, conv: Any, lease: Any) -> Any:
            announcing = getattr(conv, "announcing", None)  # the lock of the fix, if any
            if announcing is not None and announcing.locked():
                waited.append(True)
            return await real_claim(queue, conv, lease)

        monkeypatch.setattr(RunQueue, "_claim_and_execute", claim_and_execute)

        sending = asyncio.ensure_future(runtime.send_message(chat_id, "and then?"))
        await committed.reached()
        # A tab starts watching now: its look at the runs follows the new run and wakes the
        # worker, which finds it queued.
        async with watching(runtime, chat_id) as events:
            # The worker either ran the whole reply meanwhile or waits for the announcement.
            await until(
                lambda: (
                    bool(waited)
                    or any(
                        story(events, e.run_id)[-1:] == ["run.completed"]
                        for e in events
                        if e.run_id != first.run_id
                    )
                ),
                what="the woken worker answering or waiting",
            )
            committed.open()
            ticket = await sending
            await caught_up(runtime, chat_id, events)

        assert story(events, ticket.run_id) == ["run.queued", "run.started", "run.completed"]
        [written] = replies(events, ticket.run_id)
        assert written is not None and written.id == ticket.assistant_message_id

    async def test_a_look_at_the_runs_from_before_an_enqueue_does_not_end_the_new_run(
        self, chats, open_runtime, monkeypatch
    ):
        runtime = open_runtime(ScriptedModel(default="An answer."))
        chat_id = chats.create_chat().id
        await answered_once(runtime, chat_id)
        looking = gate_open_runs(monkeypatch)

        await take_lease(runtime, chat_id)
        async with watching(runtime, chat_id) as events:
            await looking.reached()  # the watcher read the table: no run open
            ticket = await runtime.send_message(chat_id, "and then?")  # followed, queued
            looking.open()
            # Its look is over once it replays (run.queued was published before).
            await until(lambda: ticket.run_id in {e.run_id for e in events}, what="a replay")
            await give_lease_back(runtime, chat_id)
            await caught_up(runtime, chat_id, events)

        assert story(events, ticket.run_id) == ["run.queued", "run.started", "run.completed"]

    async def test_a_look_at_the_runs_finished_after_the_run_ended_here_does_not_end_it_again(
        self, chats, open_runtime, monkeypatch
    ):
        runtime = open_runtime(ScriptedModel(default="An answer."))
        chat_id = chats.create_chat().id
        await answered_once(runtime, chat_id)

        await take_lease(runtime, chat_id)
        ticket = await runtime.send_message(chat_id, "and then?")  # stays queued
        looking = gate_open_runs(monkeypatch)
        async with watching(runtime, chat_id) as events:
            await looking.reached()  # the watcher saw the run open
            await give_lease_back(runtime, chat_id)
            await runtime.wait_idle(chat_id)  # answered and ended here meanwhile
            looking.open()
            await caught_up(runtime, chat_id, events)

        assert story(events, ticket.run_id) == ["run.queued", "run.started", "run.completed"]
        [written] = replies(events, ticket.run_id)
        assert written is not None and written.id == ticket.assistant_message_id
