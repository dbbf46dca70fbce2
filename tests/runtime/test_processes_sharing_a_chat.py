"""Several processes serving one data folder share a chat's run queue (issue 10, item 1).

Each process has its own runtime and in-process leases; the chat's runs live in the chat's
file, so any process may claim the next one (the database allows one running run). Seen
before: the process that lost a claim race lost its worker for good (6 of 6 times), so its
watchers never learned how its messages ended; and when the process running a reply was
killed, the other process's chat stayed ``running, queued, queued`` until something happened
to call ``subscribe()`` again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import subprocess
import sys
import textwrap

import pytest

from backend.chats import Chats
from backend.runtime import RunEvent, RunRecord, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.store import RuntimeStore
from tests.conftest import ROOT
from tests.runtime.helpers import TERMINAL, make_runtime
from tests.runtime.test_recovery import WRITER
from tests.support.deadlines import CHILD_START_S, WAIT_S
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

SENDS = 6

# A worker process: watches the chat (one subscription), sends SENDS messages once told to
# go, prints {run_id: end event type} for its own runs (those it saw end in time), and closes
# once told to stop.
SENDER = textwrap.dedent(
    """
    import asyncio, json, sys
    from backend.chats import Chats
    from backend.config import Settings
    from backend.runtime import ChatRuntime
    from backend.runtime.hosting import lock_store_from_settings
    from tests.support.scripted_model import ScriptedModel

    END = ("run.completed", "run.failed", "run.cancelled")

    async def main(data_dir, chat_id, name, sends, redis_url, wait_s):
        chats = Chats(data_dir, "user1")
        settings = Settings.from_env(
            {"CHATS_DATA_DIR": data_dir, "REFLEX_REDIS_URL": redis_url}
        )
        runtime = ChatRuntime(
            settings, chats, ScriptedModel(default=["one ", 0.01, "two"]),
            lock_store=lock_store_from_settings(settings),
        )
        ends = {}
        mine = set()
        all_ended = asyncio.Event()

        async def watch():
            async for event in runtime.subscribe(chat_id):
                if event.type in END:
                    ends[event.run_id] = event.type
                if len(mine) == sends and mine <= set(ends):
                    all_ended.set()

        watcher = asyncio.ensure_future(watch())
        print("ready", flush=True)
        sys.stdin.readline()  # go: both processes send at once
        for i in range(sends):
            ticket = await runtime.send_message(chat_id, f"{name} {i}")
            mine.add(ticket.run_id)
        try:
            await asyncio.wait_for(all_ended.wait(), wait_s)
        except TimeoutError:
            pass
        print(json.dumps({run_id: ends.get(run_id) for run_id in sorted(mine)}), flush=True)
        # stop: only once the other process's runs have ended too. Either process may be
        # answering the other's message, and a runtime that closes interrupts the run it is
        # answering (a clean stop), which the other process would see fail. Read in a thread:
        # this loop may be answering the other process's message meanwhile.
        await asyncio.to_thread(sys.stdin.readline)
        watcher.cancel()
        await runtime.aclose()

    asyncio.run(
        main(*sys.argv[1:4], int(sys.argv[4]), sys.argv[5], float(sys.argv[6]))
    )
    """
)


@pytest.fixture
def chats(tmp_path):
    directory = Chats(tmp_path / "data", "user1")
    yield directory
    directory.close()


def _runs(chats: Chats, chat_id: str, run_ids):
    store = RuntimeStore(chats.get_chat(chat_id).database)
    return sorted((store.load_run(run_id) for run_id in run_ids), key=lambda run: run.seq)


class TestTwoProcessesSendingToOneChat:
    async def test_every_run_completes_in_order_and_each_process_sees_its_own_runs_end(
        self, tmp_path, chats
    ):
        await two_processes_send(tmp_path, chats, redis_url="")


async def two_processes_send(tmp_path, chats: Chats, *, redis_url: str) -> list[RunRecord]:
    """Two sender processes at once (in-process leases, or Redis ones when ``redis_url``);
    every run completes, in order, one at a time. Returns the runs in claim order."""
    chat_id = chats.create_chat().id
    assert chats.get_chat(chat_id).session  # the file exists, as once a tab has shown it
    data = str(tmp_path / "data")
    senders = [
        subprocess.Popen(
            [sys.executable, "-c", SENDER, data, chat_id, name, str(SENDS), redis_url, str(WAIT_S)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    try:
        for sender in senders:
            ready = await asyncio.wait_for(asyncio.to_thread(sender.stdout.readline), CHILD_START_S)
            assert ready.strip() == "ready"
        for sender in senders:
            sender.stdin.write("go\n")
            sender.stdin.flush()
        lines = await asyncio.wait_for(
            asyncio.gather(*(asyncio.to_thread(s.stdout.readline) for s in senders)),
            2 * WAIT_S,  # each sender prints by its own WAIT_S
        )
        for sender in senders:
            sender.stdin.write("stop\n")
            sender.stdin.flush()
    finally:
        for sender in senders:
            if sender.poll() is None:
                sender.kill()
            sender.wait(WAIT_S)
    seen = [json.loads(line) for line in lines]
    for own in seen:  # each process's watcher saw every one of its own runs end
        assert len(own) == SENDS
    not_completed = [
        run_id for own in seen for run_id, end in own.items() if end != "run.completed"
    ]
    assert not not_completed, [
        (run.id, run.status, run.error) for run in _runs(chats, chat_id, not_completed)
    ]
    runs = _runs(chats, chat_id, [run_id for own in seen for run_id in own])
    assert [run.status for run in runs] == [RunStatus.COMPLETED] * 2 * SENDS
    for before, after in itertools.pairwise(runs):  # FIFO, one at a time
        assert before.finished_at <= after.started_at
    return runs


class TestAReplyWhoseProcessIsKilledWhileAnotherProcessWaits:
    async def test_it_is_failed_and_the_waiting_runs_answered_without_a_new_subscription(
        self, tmp_path, chats
    ):
        chat_id = chats.create_chat().id
        assert chats.get_chat(chat_id).session
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path / "data"), chat_id],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        runtime = make_runtime(tmp_path, chats, ScriptedModel("second answer", "third answer"))
        try:
            line = await asyncio.wait_for(asyncio.to_thread(writer.stdout.readline), CHILD_START_S)
            stuck_run_id, _assistant_id = line.split()
            ends: dict[str, RunEvent] = {}

            async def watch(expected: int) -> None:  # the only subscribe() call
                async for event in runtime.subscribe(chat_id):
                    if event.type in TERMINAL:
                        ends[event.run_id] = event
                        if len(ends) == expected:
                            return

            watching = asyncio.ensure_future(watch(3))
            queued = [await runtime.send_message(chat_id, text) for text in ("second", "third")]
            status = await runtime.run_status(chat_id)
            assert status.running is not None and status.running.id == stuck_run_id

            writer.send_signal(signal.SIGKILL)
            writer.wait(WAIT_S)
            await asyncio.wait_for(watching, WAIT_S)
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait(WAIT_S)
            await runtime.aclose()
        failed = ends[stuck_run_id]
        assert (failed.type, failed.data["error"]) == ("run.failed", INTERRUPTED_ERROR)
        assert [ends[t.run_id].type for t in queued] == ["run.completed", "run.completed"]
        runs = _runs(chats, chat_id, [stuck_run_id, *(t.run_id for t in queued)])
        assert [run.status for run in runs] == [
            RunStatus.FAILED,
            RunStatus.COMPLETED,
            RunStatus.COMPLETED,
        ]
        assert runs[1].finished_at <= runs[2].started_at
