"""The composer's context meter (issue 12): how much of the bound agent's context window the
next turn sends, and whether that turn compacts the thread first."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backend.models import ModelMessage, ModelRequest
from backend.runtime import DEFAULT_AGENT, AgentRegistry, ModelSettings
from backend.runtime.agents import DEFAULT_CONTEXT_TOKENS
from backend.runtime.meter import context_meter
from backend.runtime.prompt import TOKENS_PER_MESSAGE, request_tokens
from backend.sessions import estimate_string_tokens
from tests.runtime.helpers import events_until_done, fill_thread
from tests.support.deadlines import until
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

SMALL_BUDGET = replace(
    DEFAULT_AGENT,
    version=2,
    model=ModelSettings(context_tokens=2_000, compact_after_tokens=1_000, keep_recent_tokens=300),
)


async def turn(runtime, chat_id: str, text: str) -> list[str]:
    ticket = await runtime.send_message(chat_id, text)
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    return [e.type for e in events if e.run_id == ticket.run_id]


class TestWhatTheMeterMeasures:
    async def test_an_empty_chat_measures_the_instructions_and_tools_against_the_window(
        self, tmp_path, chats, open_runtime
    ):
        runtime = open_runtime(ScriptedModel(offline=True))
        chat_id = chats.create_chat().id
        meter = await runtime.context_meter(chat_id)
        assert meter.next_turn_tokens > estimate_string_tokens(DEFAULT_AGENT.system_prompt)
        assert meter.context_tokens == DEFAULT_CONTEXT_TOKENS
        assert not meter.will_compact

    async def test_the_meter_is_what_the_next_turn_sends_before_its_message(
        self, tmp_path, chats, open_runtime
    ):
        model = ScriptedModel(offline=True, default="A short answer.")
        runtime = open_runtime(model)
        chat_id = chats.create_chat().id
        await turn(runtime, chat_id, "first question")
        meter = await runtime.context_meter(chat_id)
        await turn(runtime, chat_id, "second question")
        sent = request_tokens(model.requests[-1])
        new_message = TOKENS_PER_MESSAGE + estimate_string_tokens("second question")
        assert sent == meter.next_turn_tokens + new_message

    async def test_the_meter_grows_with_each_reply(self, tmp_path, chats, open_runtime):
        runtime = open_runtime(ScriptedModel(offline=True))
        chat_id = chats.create_chat().id
        before = await runtime.context_meter(chat_id)
        await turn(runtime, chat_id, "a question worth a few tokens")
        after = await runtime.context_meter(chat_id)
        assert after.next_turn_tokens > before.next_turn_tokens


class TestTheCompactionMarker:
    async def test_the_meter_marks_the_turn_that_will_compact_and_clears_after_it(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        fill_thread(chats, chat_id, 200)
        model = ScriptedModel(offline=True)
        runtime = open_runtime(model, agents=AgentRegistry(SMALL_BUDGET))
        await runtime.bind_agent(chat_id, "assistant", version=2)
        meter = await runtime.context_meter(chat_id)
        assert meter.will_compact
        assert (meter.context_tokens, meter.compact_after_tokens) == (2_000, 1_000)
        assert "context.compacted" in await turn(runtime, chat_id, "next question")
        assert not (await runtime.context_meter(chat_id)).will_compact

    async def test_a_short_thread_does_not_compact(self, tmp_path, chats, open_runtime):
        chat_id = chats.create_chat().id
        fill_thread(chats, chat_id, 4)
        runtime = open_runtime(ScriptedModel(offline=True), agents=AgentRegistry(SMALL_BUDGET))
        await runtime.bind_agent(chat_id, "assistant", version=2)
        assert not (await runtime.context_meter(chat_id)).will_compact


class TestTheMeterFunction:
    def test_the_share_of_the_window_is_capped_at_full(self):
        request = ModelRequest(messages=(ModelMessage("user", "word " * 20_000),))
        meter = context_meter(SMALL_BUDGET, request, thread_tokens=0)
        assert meter.next_turn_tokens > meter.context_tokens
        assert meter.share == 1.0

    def test_an_agent_that_never_compacts_never_marks_a_turn(self):
        never = replace(SMALL_BUDGET, model=ModelSettings(compact_after_tokens=None))
        request = ModelRequest(messages=(ModelMessage("user", "hi"),))
        meter = context_meter(never, request, thread_tokens=10**9)
        assert not meter.will_compact and meter.compact_after_tokens is None

    def test_the_compaction_marker_sits_at_the_threshold_on_the_window_scale(self):
        request = ModelRequest(messages=(ModelMessage("user", "hi"),))
        meter = context_meter(SMALL_BUDGET, request, thread_tokens=0)
        assert meter.compact_at_share == 0.5  # 1,000 of a 2,000-token window


class TestTheHeaderInOneCall:
    async def test_chat_header_is_what_the_three_separate_reads_give(self, chats, open_runtime):
        runtime = open_runtime(ScriptedModel(offline=True, default="Hi."))
        unwritten = chats.create_chat().id
        written = chats.create_chat().id
        await turn(runtime, written, "a question")

        # The first turn names the chat in the background: compare once that has happened.
        async def named() -> bool:
            return (await runtime.get_conversation(written)).title == "A question"

        await until(named, what="the chat's title")
        chats.archive_chat(written)
        for chat_id in (unwritten, written):
            header = await runtime.chat_header(chat_id)
            # (an unwritten chat's default record is stamped when read)
            record = replace(await runtime.get_conversation(chat_id), created_at=0, updated_at=0)
            assert replace(header.conversation, created_at=0, updated_at=0) == record
            assert header.binding == await runtime.agent_binding(chat_id)
            assert header.meter == await runtime.context_meter(chat_id)
        assert (await runtime.chat_header(written)).conversation.archived_at is not None
        assert not chats.get_chat(unwritten).has_file  # reading the header wrote nothing
