"""Long threads: a turn reads a bounded window, compaction happens once per summary, and the
summary and the task-setting head reach the prompt."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backend.runtime import DEFAULT_AGENT, AgentRegistry, ModelSettings
from tests.runtime.helpers import events_until_done, fill_thread
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

SMALL_BUDGET = replace(
    DEFAULT_AGENT,
    version=2,
    model=ModelSettings(context_tokens=2_000, compact_after_tokens=1_000, keep_recent_tokens=300),
)


async def turn(runtime, chat_id, text):
    ticket = await runtime.send_message(chat_id, text)
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    return [e for e in events if e.run_id == ticket.run_id]


async def test_after_compacting_the_next_turns_reuse_the_summary_without_compacting(
    tmp_path, chats, open_runtime
):
    chat_id = chats.create_chat().id
    fill_thread(chats, chat_id, 200)
    model = ScriptedModel(offline=True)
    runtime = open_runtime(model, agents=AgentRegistry(SMALL_BUDGET))
    await runtime.bind_agent(chat_id, "assistant", version=2)
    first = await turn(runtime, chat_id, "first new question")
    assert [e.type for e in first].count("context.compacted") == 1
    for index in range(3):
        later = await turn(runtime, chat_id, f"follow-up {index}")
        assert "context.compacted" not in [e.type for e in later]
    request = model.requests[-1]
    summary = request.section("summary").text
    assert summary.startswith("Summary of earlier turns (extractive):")
    contents = [m.content for m in request.messages]
    assert contents[0].startswith("turn 0 ")  # the head that set the task
    assert contents[-1] == "follow-up 2"
    assert not any(c.startswith("turn 100 ") for c in contents)
    summary_record = await runtime.get_thread_summary(chat_id)
    assert summary_record.version == 1
    assert summary_record.summary == summary


@pytest.mark.slow
async def test_a_thread_past_the_stores_walk_cap_is_compacted_once_not_every_turn(
    tmp_path, chats, open_runtime
):
    chat_id = chats.create_chat().id
    fill_thread(chats, chat_id, 10_050)
    model = ScriptedModel(offline=True)
    runtime = open_runtime(model, agents=AgentRegistry(SMALL_BUDGET))
    await runtime.bind_agent(chat_id, "assistant", version=2)
    kinds = []
    for index in range(4):
        kinds.append([e.type for e in await turn(runtime, chat_id, f"q{index}")])
    assert [k.count("context.compacted") for k in kinds] == [1, 0, 0, 0]
    assert model.requests[-1].section("summary") is not None
