"""A reply whose process stopped mid-stream: whoever watches the chat next sees it end.

The bug this guards (e2e, dev mode): a hot reload restarted the app's worker while a reply was
streaming. The new worker only *watched* the chat (the UI subscribes to run events and re-reads
the transcript), and recovery ran only when a conversation was opened to write. So the run row
stayed ``running``, the placeholder kept its checkpointed partial text with status ``running``,
and every tab showed that reply as streaming forever.

Recovery must not touch a run that another *live* process is writing (several workers share
one data directory, each with its own in-process lease store), so runs carry the claiming
process and only a run whose process is gone is recovered.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys

import pytest

from backend.chats import Chats
from backend.runtime import RunEvent, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.locks import may_be_running, process_owner
from backend.runtime.pg_store import runtime_store_for
from tests.runtime.helpers import die_mid_run, make_runtime
from tests.runtime.processes import first_line, reap, start_writer
from tests.support.deadlines import WAIT_S
from tests.support.scripted_model import Hold, ScriptedModel

pytestmark = pytest.mark.anyio


async def _first_failure(
    runtime, chat_id: str, run_id: str, subscribed: asyncio.Event | None = None
) -> RunEvent:
    async for event in runtime.subscribe(chat_id):
        if subscribed is not None:
            subscribed.set()
        if event.run_id == run_id and event.type in ("run.failed", "run.completed"):
            return event
    raise AssertionError("the subscription ended")


def _run_row(chats: Chats, chat_id: str, run_id: str):
    return runtime_store_for(chats.get_chat(chat_id).sessions.database).load_run(run_id)


class TestAReplyWhoseProcessStopped:
    async def test_is_ended_for_watchers_once_its_process_is_gone_and_not_before(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        assert chats.get_chat(chat_id).session  # the file exists, as once a tab has shown it
        writer = start_writer(tmp_path / "data", chat_id)
        try:
            run_id, assistant_id = (await first_line(writer)).split()
            # Another worker of the same app opens the chat (which looks at its runs) and
            # watches it while the reply streams there.
            runtime = open_runtime(ScriptedModel())
            status = await runtime.run_status(chat_id)
            assert status.running is not None and status.running.id == run_id
            assert _run_row(chats, chat_id, run_id).status == RunStatus.RUNNING
            watching = asyncio.ensure_future(_first_failure(runtime, chat_id, run_id))

            writer.send_signal(signal.SIGKILL)  # the worker is restarted (a hot reload)
            writer.wait(WAIT_S)
            # A tab reconnects to the new worker: watching is all it does.
            again = asyncio.ensure_future(_first_failure(runtime, chat_id, run_id))
            events = await asyncio.wait_for(asyncio.gather(again, watching), WAIT_S)
        finally:
            reap(writer)
        for event in events:  # the new watcher and the one already watching
            assert event.type == "run.failed"
            assert event.data["error"] == INTERRUPTED_ERROR
            assert event.data["partial"] is True
        run = _run_row(chats, chat_id, run_id)
        assert (run.status, run.error) == (RunStatus.FAILED, INTERRUPTED_ERROR)
        assert run.finished_at is not None
        reply = chats.get_chat(chat_id).session.get_message(assistant_id)
        assert reply["metadata"]["status"] == "failed"
        assert reply["parts"] == [{"type": "text", "text": "partial "}]  # the checkpoint kept

    async def test_in_this_process_watching_alone_recovers_it_keeping_the_saved_reply(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        stopped = make_runtime(
            tmp_path, chats, ScriptedModel(["saved ", hold]), checkpoint_interval_s=0
        )
        ticket = await stopped.send_message(chat_id, "first")
        await hold.reached()
        waiting = await stopped.send_message(chat_id, "second")
        await die_mid_run(stopped)
        assert _run_row(chats, chat_id, ticket.run_id).status == RunStatus.RUNNING

        revived = open_runtime(ScriptedModel("answer to second"))
        event = await asyncio.wait_for(_first_failure(revived, chat_id, ticket.run_id), WAIT_S)
        assert (event.data["error"], event.data["partial"]) == (INTERRUPTED_ERROR, True)
        await revived.wait_idle(chat_id)  # the queued message is answered too
        assert _run_row(chats, chat_id, waiting.run_id).status == RunStatus.COMPLETED
        reply = chats.get_chat(chat_id).session.get_message(ticket.assistant_message_id)
        assert reply["parts"] == [{"type": "text", "text": "saved "}]
        assert reply["metadata"]["status"] == "failed"
        hold.release()

    async def test_a_run_this_runtime_is_writing_is_never_recovered_by_a_watcher(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel(["one ", hold, "two"]))
        ticket = await runtime.send_message(chat_id, "hi")
        await hold.reached()
        subscribed = [asyncio.Event(), asyncio.Event()]
        watchers = [
            asyncio.ensure_future(_first_failure(runtime, chat_id, ticket.run_id, event))
            for event in subscribed
        ]
        # Each watcher has looked at the chat's runs once it sees the replayed events.
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in subscribed)), WAIT_S)
        hold.release()
        events = await asyncio.wait_for(asyncio.gather(*watchers), WAIT_S)
        assert [e.type for e in events] == ["run.completed", "run.completed"]


class TestWhoMayBeRunning:
    def test_only_a_live_other_process_may_be_running_a_run(self):
        host = socket.gethostname()
        assert may_be_running(None) is False  # claimed before runs were signed
        assert may_be_running(process_owner("runtime_x")) is False  # this process: leases decide
        assert may_be_running(f"{host}:{os.getppid()}:runtime_y") is True
        assert may_be_running(f"another-host.invalid:{os.getpid()}:runtime_z") is True
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait(WAIT_S)
        assert may_be_running(f"{host}:{gone.pid}:runtime_w") is False
