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
import signal

import pytest

from backend.runtime import RunEvent, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR
from tests.runtime.helpers import TERMINAL, make_runtime
from tests.runtime.processes import first_line, reap, runs_of, start_writer, two_processes_send
from tests.support.deadlines import WAIT_S
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio


class TestTwoProcessesSendingToOneChat:
    async def test_every_run_completes_in_order_and_each_process_sees_its_own_runs_end(
        self, tmp_path, chats
    ):
        await two_processes_send(tmp_path, chats, redis_url="")


class TestAReplyWhoseProcessIsKilledWhileAnotherProcessWaits:
    async def test_it_is_failed_and_the_waiting_runs_answered_without_a_new_subscription(
        self, tmp_path, chats
    ):
        chat_id = chats.create_chat().id
        assert chats.get_chat(chat_id).session
        writer = start_writer(tmp_path / "data", chat_id)
        runtime = make_runtime(tmp_path, chats, ScriptedModel("second answer", "third answer"))
        try:
            stuck_run_id, _assistant_id = (await first_line(writer)).split()
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
            reap(writer)
            await runtime.aclose()
        failed = ends[stuck_run_id]
        assert (failed.type, failed.data["error"]) == ("run.failed", INTERRUPTED_ERROR)
        assert [ends[t.run_id].type for t in queued] == ["run.completed", "run.completed"]
        runs = runs_of(chats, chat_id, [stuck_run_id, *(t.run_id for t in queued)])
        assert [run.status for run in runs] == [
            RunStatus.FAILED,
            RunStatus.COMPLETED,
            RunStatus.COMPLETED,
        ]
        assert runs[1].finished_at <= runs[2].started_at
