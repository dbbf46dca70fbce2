"""Other processes on the test's data folder: a writer killed mid-reply (``WRITER``) and
senders sharing one chat's run queue (``two_processes_send``), for the recovery, clean-stop,
shared-chat and Redis suites, which import them from here rather than from one another."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from backend.chats import Chats
from backend.runtime import RunRecord, RunStatus
from backend.runtime.pg_store import runtime_store_for
from tests.conftest import ROOT
from tests.support.deadlines import CHILD_START_S, WAIT_S

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


def runs_of(chats: Chats, chat_id: str, run_ids):
    store = runtime_store_for(chats.get_chat(chat_id).database)
    return sorted((store.load_run(run_id) for run_id in run_ids), key=lambda run: run.seq)


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
        (run.id, run.status, run.error) for run in runs_of(chats, chat_id, not_completed)
    ]
    runs = runs_of(chats, chat_id, [run_id for own in seen for run_id in own])
    assert [run.status for run in runs] == [RunStatus.COMPLETED] * 2 * SENDS
    for before, after in itertools.pairwise(runs):  # FIFO, one at a time
        assert before.finished_at <= after.started_at
    return runs


# A worker process: streams "partial " (saved by a checkpoint), then hangs until killed.
WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from backend.chats import Chats
    from backend.config import Settings
    from backend.runtime import ChatRuntime
    from tests.support.scripted_model import Hold, ScriptedModel

    async def main(data_dir, chat_id):
        chats = Chats(data_dir, "user1")
        runtime = ChatRuntime(
            Settings.from_env({"CHATS_DATA_DIR": data_dir}), chats,
            ScriptedModel(["partial ", Hold()]), checkpoint_interval_s=0,
        )
        ticket = await runtime.send_message(chat_id, "tell me a long story")
        session = chats.get_chat(chat_id).session
        while not (session.get_message(ticket.assistant_message_id) or {}).get("parts"):
            await asyncio.sleep(0.01)
        print(ticket.run_id, ticket.assistant_message_id, flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def start_writer(data_dir: Path, chat_id: str) -> subprocess.Popen[str]:
    """A ``WRITER`` process replying in ``chat_id``; :func:`first_line` gives its run and
    reply ids once "partial " is saved; :func:`reap` it in a ``finally``."""
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir), chat_id],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


async def first_line(process: subprocess.Popen[str], timeout_s: float = CHILD_START_S) -> str:
    """The next line a child process prints (its first waits for Python to import the app)."""
    assert process.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), timeout_s)
    assert line, f"the child ended early (exit {process.poll()})"
    return line


def reap(process: subprocess.Popen[str]) -> None:
    """Kill ``process`` if it still runs, and wait for it."""
    if process.poll() is None:
        process.kill()
    process.wait(WAIT_S)
    if process.stdout is not None:
        process.stdout.close()
