"""Stopping the server while replies stream (issue 14): nothing the user saw is lost.

A child process runs a runtime that streams from the fake OpenAI server, with two more
messages queued behind the reply, and is sent SIGTERM mid-reply. It must exit promptly,
having saved the partial reply marked interrupted (the same status and sentence as a reply
recovered after a kill) and told its watcher. A later runtime on the same data folder
answers the queued messages and can regenerate the interrupted reply.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap

import pytest

from backend.errors import ChatsError
from backend.runtime import ChatRuntime, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.pg_store import runtime_store_for
from tests.conftest import ROOT
from tests.runtime.helpers import make_runtime
from tests.runtime.processes import first_line, reap, start_writer
from tests.support.deadlines import WAIT_S
from tests.support.fake_replies import endless, text
from tests.support.scripted_model import Hold, ScriptedModel

pytestmark = pytest.mark.anyio

# Sends a message (streamed by the fake server) and two more queued behind it; once the first
# delta arrived prints the run ids; on SIGTERM calls runtime.shutdown() and prints the end
# events its watcher saw.
SERVER = textwrap.dedent(
    """
    import asyncio, json, signal, sys
    from backend.chats import Chats
    from backend.config import Settings
    from backend.runtime import ChatRuntime

    END = ("run.completed", "run.failed", "run.cancelled")

    async def main(data_dir, base_url, chat_id):
        settings = Settings.from_env({
            "CHATS_DATA_DIR": data_dir, "CHATS_MODEL_BASE_URL": base_url,
            "CHATS_MODEL_API_KEY": "k", "CHATS_MODEL": "fake-model",
        })
        chats = Chats(data_dir, "user1")
        runtime = ChatRuntime(settings, chats)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        streaming = asyncio.Event()
        ends = {}

        async def watch():
            async for event in runtime.subscribe(chat_id):
                if event.type == "message.delta":
                    streaming.set()
                if event.type in END:
                    ends[event.run_id] = [event.type, event.data.get("error")]

        watcher = asyncio.ensure_future(watch())
        first = await runtime.send_message(chat_id, "tell me a long story")
        queued = [await runtime.send_message(chat_id, text) for text in ("second", "third")]
        await streaming.wait()
        print(json.dumps([first.run_id, first.assistant_message_id,
                          [t.run_id for t in queued]]), flush=True)
        await stop.wait()
        await runtime.shutdown()
        await watcher  # ends once the runtime closed its subscriptions
        chats.close()
        print(json.dumps(ends), flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
    """
)


class TestSigtermWhileAReplyStreams:
    async def test_the_partial_reply_is_kept_interrupted_and_queued_runs_wait_for_the_next_start(
        self, tmp_path, chats, fake_openai
    ):
        fake_openai.script(endless("and on ", interval_s=0.01))
        fake_openai.default = text("A fresh ", "answer.")
        chat_id = chats.create_chat().id
        child = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(tmp_path / "data"), fake_openai.base_url, chat_id],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            run_id, assistant_id, queued_ids = json.loads(await first_line(child))
            child.send_signal(signal.SIGTERM)
            ends = json.loads(await first_line(child, timeout_s=WAIT_S))
            exit_code = await asyncio.wait_for(asyncio.to_thread(child.wait), WAIT_S)
        finally:
            reap(child)
        assert exit_code == 0
        assert ends == {run_id: ["run.failed", INTERRUPTED_ERROR]}  # its tabs were told

        store = runtime_store_for(chats.get_chat(chat_id).database)
        stopped = store.load_run(run_id)
        assert (stopped.status, stopped.error) == (RunStatus.FAILED, INTERRUPTED_ERROR)
        assert [store.load_run(q).status for q in queued_ids] == [RunStatus.QUEUED] * 2
        reply = chats.get_chat(chat_id).session.get_message(assistant_id)
        assert reply["metadata"]["status"] == "failed"
        assert reply["metadata"]["error"] == INTERRUPTED_ERROR
        saved = "".join(p["text"] for p in reply["parts"] if p["type"] == "text")
        # Saved by the stop itself: the first checkpoint (2 s) had not come yet.
        assert saved.startswith("and on ")

        restarted = ChatRuntime(fake_openai.settings(tmp_path / "data"), chats)
        try:
            await restarted.wait_idle(chat_id)  # opening the chat resumes its queue
            again = await restarted.regenerate(chat_id, assistant_id)
            await restarted.wait_idle(chat_id)
        finally:
            await restarted.shutdown()
        assert [store.load_run(q).status for q in queued_ids] == [RunStatus.COMPLETED] * 2
        assert store.load_run(again.run_id).status == RunStatus.COMPLETED
        regenerated = chats.get_chat(chat_id).session.get_message(again.assistant_message_id)
        assert regenerated["parts"] == [{"type": "text", "text": "A fresh answer."}]


class TestSigkillWhileAReplyStreams:
    async def test_after_restart_the_reply_reads_exactly_as_after_a_clean_stop(
        self, tmp_path, chats
    ):
        chat_id = chats.create_chat().id
        writer = start_writer(tmp_path / "data", chat_id)
        try:
            run_id, assistant_id = (await first_line(writer)).split()
            writer.send_signal(signal.SIGKILL)
            writer.wait(WAIT_S)
        finally:
            reap(writer)
        restarted = make_runtime(tmp_path, chats, ScriptedModel("again"))
        try:
            await restarted.wait_idle(chat_id)
            again = await restarted.regenerate(chat_id, assistant_id)
            await restarted.wait_idle(chat_id)
        finally:
            await restarted.shutdown()
        store = runtime_store_for(chats.get_chat(chat_id).database)
        killed = store.load_run(run_id)
        assert (killed.status, killed.error) == (RunStatus.FAILED, INTERRUPTED_ERROR)
        reply = chats.get_chat(chat_id).session.get_message(assistant_id)
        assert (reply["metadata"]["status"], reply["metadata"]["error"]) == (
            "failed",
            INTERRUPTED_ERROR,
        )
        assert store.load_run(again.run_id).status == RunStatus.COMPLETED


class TestShutdownInProcess:
    async def test_a_reply_being_streamed_is_saved_interrupted_and_queued_runs_stay_queued(
        self, chats, open_runtime
    ):
        held = Hold()
        runtime = open_runtime(ScriptedModel(["so far ", held]))
        chat_id = chats.create_chat().id
        first = await runtime.send_message(chat_id, "one")
        second = await runtime.send_message(chat_id, "two")
        await held.reached()
        await runtime.shutdown()
        await runtime.shutdown()  # idempotent
        held.release()
        store = runtime_store_for(chats.get_chat(chat_id).database)
        assert store.load_run(first.run_id).status == RunStatus.FAILED
        assert store.load_run(second.run_id).status == RunStatus.QUEUED
        reply = chats.get_chat(chat_id).session.get_message(first.assistant_message_id)
        assert reply["parts"] == [{"type": "text", "text": "so far "}]


class _ClosableModel(ScriptedModel):
    closed = False

    async def aclose(self) -> None:
        self.closed = True


class TestReleasingAnIdleRuntime:
    async def test_the_shared_model_stays_open_and_no_new_message_is_taken(
        self, chats, open_runtime
    ):
        model = _ClosableModel(["hello"])
        runtime = open_runtime(model)
        chat_id = chats.create_chat().id
        ticket = await runtime.send_message(chat_id, "one")
        await runtime.wait_idle(chat_id)
        await runtime.release()
        await runtime.release()  # idempotent
        assert not model.closed  # the host shares its model sources between runtimes
        store = runtime_store_for(chats.get_chat(chat_id).database)
        assert store.load_run(ticket.run_id).status == RunStatus.COMPLETED
        with pytest.raises(ChatsError):
            await runtime.send_message(chat_id, "two")
