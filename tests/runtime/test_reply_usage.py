"""Each reply records its token usage (issue 12): the server's ``usage`` when it sends one,
else an estimate marked as one; kept by every writer of the reply, recovery included.

Over the real HTTP client against the fake OpenAI server, which sends ``usage`` only to a
request that asks for it (``stream_options.include_usage``), as OpenAI does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backend.chats import Chats
from backend.config import Settings
from backend.models import ReplyUsage, ToolCall, Usage
from backend.runtime import ChatRuntime, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.turn import Turn
from backend.sessions import estimate_string_tokens
from tests.runtime.helpers import leave_a_run_running
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_replies import cut, text, tool_call

pytestmark = pytest.mark.anyio


@pytest.fixture
def settings(tmp_path: Path, fake_openai: FakeOpenAI) -> Settings:
    return fake_openai.settings(tmp_path / "data")


@pytest.fixture
async def runtime(settings: Settings, chats: Chats) -> AsyncIterator[ChatRuntime]:
    opened = ChatRuntime(settings, chats)
    yield opened
    await opened.aclose()


async def reply_metadata(runtime: ChatRuntime, chats: Chats, words: str) -> dict[str, Any]:
    chat = chats.get_chat(chats.create_chat("Usage").id)
    ticket = await runtime.send_message(chat.id, words)
    await runtime.wait_idle(chat.id)
    return chat.session.get_message(ticket.assistant_message_id)["metadata"]


class TestTheServersUsageIsKept:
    async def test_a_reply_stores_the_usage_the_server_reported(
        self, runtime: ChatRuntime, chats: Chats, fake_openai: FakeOpenAI
    ):
        fake_openai.script(
            text("Ahoy", " there.", usage={"prompt_tokens": 412, "completion_tokens": 96})
        )
        metadata = await reply_metadata(runtime, chats, "hello")
        assert metadata["usage"] == {"inputTokens": 412, "outputTokens": 96, "estimated": False}

    async def test_the_request_asks_the_server_to_report_usage(
        self, runtime: ChatRuntime, chats: Chats, fake_openai: FakeOpenAI
    ):
        await reply_metadata(runtime, chats, "hello")
        body = fake_openai.requests[-1].body
        assert body["stream_options"] == {"include_usage": True}

    async def test_tool_rounds_add_up_into_one_reply_usage(
        self, runtime: ChatRuntime, chats: Chats, fake_openai: FakeOpenAI
    ):
        fake_openai.script(
            tool_call("remember", {"fact": "likes tea"}),
            text("Noted.", usage={"prompt_tokens": 300, "completion_tokens": 4}),
        )
        metadata = await reply_metadata(runtime, chats, "remember I like tea")
        usage = ReplyUsage.from_metadata(metadata)
        assert usage is not None
        # The tool round reported nothing: its share is estimated, so the total is too.
        assert usage.estimated
        assert usage.input_tokens > 300 and usage.output_tokens > 4


class TestAnEstimateSaysItIsOne:
    async def test_a_reply_without_server_usage_carries_an_estimate_marked_as_one(
        self, runtime: ChatRuntime, chats: Chats, fake_openai: FakeOpenAI
    ):
        fake_openai.script(text("A", " reply", " of", " a", " few", " words."))
        metadata = await reply_metadata(runtime, chats, "hello there")
        usage = ReplyUsage.from_metadata(metadata)
        assert usage is not None and usage.estimated
        assert usage.input_tokens > 0 and usage.output_tokens > 0

    async def test_a_reply_that_broke_off_keeps_an_estimate_of_what_arrived(
        self, runtime: ChatRuntime, chats: Chats, fake_openai: FakeOpenAI
    ):
        fake_openai.script(cut("The first half of a long answer"))
        metadata = await reply_metadata(runtime, chats, "tell me")
        assert metadata["status"] == "failed"
        usage = ReplyUsage.from_metadata(metadata)
        assert usage is not None and usage.estimated and usage.output_tokens > 0


class TestARecoveredReplyKeepsItsUsage:
    async def test_recovery_keeps_the_usage_the_last_checkpoint_saved(
        self, runtime: ChatRuntime, chats: Chats, settings: Settings
    ):
        checkpoint = ReplyUsage(250, 12, estimated=True).metadata_entry()
        chat = chats.create_chat("Interrupted").id
        record = await runtime.get_conversation(chat)
        leave_a_run_running(chats, chat, record, reply_metadata={"status": "running", **checkpoint})
        recovering = ChatRuntime(settings, chats)
        try:
            run = await recovering.get_run(chat, "run_gone")  # opening recovers it
        finally:
            await recovering.aclose()
        assert (run.status, run.error) == (RunStatus.FAILED, INTERRUPTED_ERROR)
        metadata = chats.get_chat(chat).session.get_message("a1")["metadata"]
        assert metadata["usage"] == {"inputTokens": 250, "outputTokens": 12, "estimated": True}

    async def test_a_recovered_reply_saved_without_usage_gets_an_estimate_of_its_text(
        self, runtime: ChatRuntime, chats: Chats, settings: Settings
    ):
        chat = chats.create_chat("Interrupted").id
        record = await runtime.get_conversation(chat)
        leave_a_run_running(chats, chat, record, reply_metadata={"status": "running"})
        recovering = ChatRuntime(settings, chats)
        try:
            await recovering.get_run(chat, "run_gone")
        finally:
            await recovering.aclose()
        metadata = chats.get_chat(chat).session.get_message("a1")["metadata"]
        usage = ReplyUsage.from_metadata(metadata)
        assert usage is not None and usage.estimated and usage.output_tokens > 0


class TestTurnUsage:
    def test_a_call_in_flight_counts_as_an_estimate_once_it_sent_text(self):
        turn = Turn()
        turn.begin_call(100)
        assert turn.current_usage() is None  # nothing arrived: nothing to bill yet
        turn.add_text("Half a reply")
        estimate = estimate_string_tokens("Half a reply")
        assert turn.current_usage() == ReplyUsage(100, estimate, estimated=True)

    def test_a_reported_call_replaces_the_estimate_of_that_call(self):
        turn = Turn()
        turn.begin_call(100)
        turn.add_text("Half a reply")
        turn.end_call(Usage(prompt_tokens=120, completion_tokens=7), [])
        assert turn.current_usage() == ReplyUsage(120, 7, estimated=False)

    def test_tool_calls_count_as_output_of_an_unreported_call(self):
        turn = Turn()
        turn.begin_call(10)
        turn.end_call(None, [ToolCall("c1", "remember", {"fact": "the user likes green tea"})])
        usage = turn.current_usage()
        assert usage is not None and usage.estimated and usage.output_tokens > 0

    def test_a_saved_reply_brings_back_its_usage(self):
        message = {
            "parts": [{"type": "text", "text": "so far"}],
            "metadata": ReplyUsage(9, 2).metadata_entry(),
        }
        assert Turn.saved(message).current_usage() == ReplyUsage(9, 2)


class TestStoredUsageIsReadSafely:
    @pytest.mark.parametrize(
        "metadata",
        [
            None,
            {},
            {"usage": "lots"},
            {"usage": {"inputTokens": -1, "outputTokens": 2}},
            {"usage": {"inputTokens": 1.5, "outputTokens": 2}},
            {"usage": {"inputTokens": True, "outputTokens": 2}},
            {"usage": {"outputTokens": 2}},
        ],
    )
    def test_a_missing_or_malformed_usage_reads_as_none(self, metadata):
        assert ReplyUsage.from_metadata(metadata) is None

    def test_usage_round_trips_through_message_metadata(self):
        usage = ReplyUsage(412, 96, estimated=False)
        assert ReplyUsage.from_metadata(usage.metadata_entry()) == usage
