"""Seed 004 acceptance criteria, one test each, against the real runtime and real SQLite files.

The model is scripted (tests/support/scripted_model.py); the directory is a small stand-in
over real ``Sessions`` files (tests/support/fake_directory.py).
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

import pytest

from backend.errors import StaleVersionError
from backend.models import Finish, TextDelta, ToolCall
from backend.runtime import (
    DEFAULT_AGENT,
    AgentDefinition,
    AgentRegistry,
    ModelSettings,
    RunStatus,
)
from backend.runtime.store import RuntimeStore
from tests.runtime.helpers import events_until_done, make_runtime, texts
from tests.support.fake_directory import FakeDirectory
from tests.support.scripted_model import Hold, ScriptedModel

pytestmark = pytest.mark.anyio

HELPER_V1 = AgentDefinition(id="helper", version=1, system_prompt="You are helper v1.")


@pytest.fixture
def directory(tmp_path):
    directory = FakeDirectory(tmp_path)
    yield directory
    directory.close()


async def test_a_resumed_thread_runs_the_same_bound_agent_and_version_when_pinned(
    tmp_path,
    directory,
    closing,
):
    registry = AgentRegistry(HELPER_V1)
    model = ScriptedModel()
    pinned = directory.create_chat().id
    latest = directory.create_chat().id
    runtime = closing(make_runtime(tmp_path, directory, model, agents=registry))
    await runtime.bind_agent(pinned, "helper", policy="pinned")
    await runtime.bind_agent(latest, "helper", policy="latest")
    for chat_id in (pinned, latest):
        ticket = await runtime.send_message(chat_id, "first")
        await events_until_done(runtime, chat_id, ticket.run_id)
    await runtime.aclose()

    # A new version is published; the thread is resumed by a fresh runtime (a restart).
    registry.publish("helper", system_prompt="You are helper v2.")
    model.requests.clear()
    resumed = closing(make_runtime(tmp_path, directory, model, agents=registry))
    for chat_id in (pinned, latest):
        ticket = await resumed.send_message(chat_id, "again")
        await events_until_done(resumed, chat_id, ticket.run_id)
    by_chat = {r.metadata["chat_id"]: r for r in model.requests}
    assert by_chat[pinned].system == "You are helper v1."
    assert by_chat[pinned].metadata["agent"] == "helper@1"
    assert by_chat[latest].system == "You are helper v2."
    record = await resumed.get_conversation(pinned)
    assert (record.agent_id, record.agent_version_policy, record.agent_version) == (
        "helper",
        "pinned",
        1,
    )
    run = await resumed.get_run(pinned, record.last_run_id)
    assert (run.agent_id, run.agent_version, run.status) == ("helper", 1, RunStatus.COMPLETED)


async def test_session_state_survives_across_runs_and_is_never_written_directly_from_model_output(
    tmp_path,
    directory,
    closing,
):
    chat_id = directory.create_chat().id
    model = ScriptedModel(
        # Run 1: the model proposes a change through the tool; the runtime commits it.
        [ToolCall("c1", "update_session_state", {"set": {"step": 1, "topic": "trip"}})],
        "Noted the plan.",
        # Run 2: the model *writes* state-looking text and proposes an invalid change.
        [
            '{"session_state": {"step": 99}} ',
            ToolCall("c2", "update_session_state", {"set": {"api_key": "sk-secret"}}),
        ],
        "Could not save that.",
    )
    runtime = closing(make_runtime(tmp_path, directory, model))
    first = await runtime.send_message(chat_id, "plan a trip")
    await events_until_done(runtime, chat_id, first.run_id)
    assert (await runtime.get_session_state(chat_id)).data == {"step": 1, "topic": "trip"}

    second = await runtime.send_message(chat_id, "store my key")
    events = await events_until_done(runtime, chat_id, second.run_id)
    tool_events = [e for e in events if e.type == "tool.call" and e.run_id == second.run_id]
    assert [e.data["state"] for e in tool_events] == ["input-available", "output-error"]
    assert "secrets" in tool_events[1].data["errorText"]
    # Run 2 saw the state committed by run 1 in its prompt.
    second_request = model.requests[2]
    assert '"step": 1' in second_request.section("session_state").text
    await runtime.aclose()

    # Survives a restart; untouched by run 2's text and rejected proposal.
    fresh = closing(make_runtime(tmp_path, directory, ScriptedModel()))
    state = await fresh.get_session_state(chat_id)
    assert (state.version, state.data) == (1, {"step": 1, "topic": "trip"})
    stored = directory.get_chat(chat_id).session.get_message(second.assistant_message_id)
    assert stored["parts"][-1]["type"] == "text"  # the text stayed text


async def test_concurrent_session_state_writes_are_rejected_by_version_never_merged(
    tmp_path,
    directory,
    closing,
):
    chat_id = directory.create_chat().id
    hold = Hold()
    model = ScriptedModel(
        [ToolCall("c1", "update_session_state", {"set": {"from_run": True}})],
        [hold, "done"],
    )
    runtime = closing(make_runtime(tmp_path, directory, model))
    # Two direct writers racing on version 0: exactly one wins.
    results = await asyncio.gather(
        runtime.put_session_state(chat_id, {"writer": "a"}, expected_version=0),
        runtime.put_session_state(chat_id, {"writer": "b"}, expected_version=0),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["SessionState", "StaleVersionError"]
    winner = next(r for r in results if not isinstance(r, Exception))

    # A run reads version 1 at claim; another writer commits version 2 while it streams.
    ticket = await runtime.send_message(chat_id, "update please")
    await hold.reached()
    await runtime.put_session_state(chat_id, {"writer": "ui"}, expected_version=winner.version)
    hold.release()
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    failed = events[-1]
    assert failed.type == "run.failed"
    assert failed.data["error_type"] == "StaleVersionError"
    state = await runtime.get_session_state(chat_id)
    assert state.data == {"writer": "ui"}  # not merged with {"from_run": True}
    assert state.version == 2
    session = directory.get_chat(chat_id).session
    assert session.get_message(ticket.user_message_id) is not None
    assert session.get_message(ticket.assistant_message_id)["metadata"]["status"] == "failed"
    with pytest.raises(StaleVersionError):
        await runtime.put_session_state(chat_id, {"late": 1}, expected_version=1)


async def test_two_queued_runs_in_one_conversation_execute_in_enqueue_order_never_concurrently(
    tmp_path,
    directory,
    closing,
):
    chat_id = directory.create_chat().id
    other = directory.create_chat().id
    hold = Hold()
    other_hold = Hold()
    model = ScriptedModel([hold, "one"], [other_hold, "elsewhere"], [0.01, "two"], "three")
    runtime = closing(make_runtime(tmp_path, directory, model))
    first = await runtime.send_message(chat_id, "q1")
    await hold.reached()
    # Another conversation runs in parallel while this one is busy.
    elsewhere = await runtime.send_message(other, "other chat")
    await other_hold.reached()
    second = await runtime.send_message(chat_id, "q2")
    third = await runtime.send_message(chat_id, "q3")
    status = await runtime.run_status(chat_id)
    assert status.running.id == first.run_id
    assert [r.id for r in status.queued] == [second.run_id, third.run_id]
    hold.release()
    other_hold.release()
    events = await events_until_done(runtime, chat_id, third.run_id)
    await events_until_done(runtime, other, elsewhere.run_id)

    lifecycle = [(e.type, e.run_id) for e in events if e.type.startswith("run.")]
    order = [first.run_id, second.run_id, third.run_id]
    starts = [run for kind, run in lifecycle if kind == "run.started"]
    assert starts == order
    for before, after in itertools.pairwise(order):
        assert lifecycle.index(("run.completed", before)) < lifecycle.index(("run.started", after))
    assert model.max_active[chat_id] == 1
    user_turns = [
        r.messages[-1].content for r in model.requests if r.metadata["chat_id"] == chat_id
    ]
    assert user_turns == ["q1", "q2", "q3"]
    # Messages sent during a run land after that run's reply, on one branch.
    assert texts(directory.get_chat(chat_id).session) == [
        ("user", "q1"),
        ("assistant", "one"),
        ("user", "q2"),
        ("assistant", "two"),
        ("user", "q3"),
        ("assistant", "three"),
    ]


async def test_session_state_and_final_messages_for_a_turn_commit_atomically(
    tmp_path,
    directory,
    monkeypatch,
    closing,
):
    chat_id = directory.create_chat().id
    model = ScriptedModel(
        [ToolCall("c1", "update_session_state", {"set": {"step": 1}})],
        "Saved the step.",
    )
    runtime = closing(make_runtime(tmp_path, directory, model))
    original = RuntimeStore.finish_run

    def failing_finish(self, run_id, status, **kwargs):
        if status == RunStatus.COMPLETED:
            raise OSError("disk full while finalising the turn")
        return original(self, run_id, status, **kwargs)

    monkeypatch.setattr(RuntimeStore, "finish_run", failing_finish)
    ticket = await runtime.send_message(chat_id, "remember step 1")
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    assert events[-1].type == "run.failed"

    # Neither the state write nor the "completed" reply is visible: all or nothing.
    state = await runtime.get_session_state(chat_id)
    assert (state.version, state.data) == (0, {})
    session = directory.get_chat(chat_id).session
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["metadata"]["status"] == "failed"
    assert "disk full" in reply["metadata"]["error"]
    assert reply["parts"][-1] == {"type": "text", "text": "Saved the step."}  # partial kept
    assert session.get_message(ticket.user_message_id)["parts"] == [
        {"type": "text", "text": "remember step 1"}
    ]
    run = await runtime.get_run(chat_id, ticket.run_id)
    assert run.status == RunStatus.FAILED


async def test_compaction_preserves_recent_turns_and_tool_continuity_and_is_observable_as_an_event(
    tmp_path,
    directory,
    closing,
):
    agent = replace(
        DEFAULT_AGENT,
        version=2,
        model=ModelSettings(compact_after_tokens=400, keep_recent_tokens=120),
    )
    registry = AgentRegistry(agent)
    chat_id = directory.create_chat().id
    model = ScriptedModel(complete_with="SUMMARY: the user planned a long trip.")
    runtime = closing(make_runtime(tmp_path, directory, model, agents=registry))
    await runtime.bind_agent(chat_id, "assistant", version=1)  # never compacts this thread
    for i in range(8):
        model.script(f"answer number {i} " + "detail " * 30)
        ticket = await runtime.send_message(chat_id, f"question {i} " + "context " * 30)
        await events_until_done(runtime, chat_id, ticket.run_id)
    # The most recent turn before compaction used a tool: it must survive verbatim.
    model.script(
        [ToolCall("t1", "remember", {"fact": "prefers trains"}), Finish("tool_calls")],
        [TextDelta("Saved.")],
    )
    tool_turn = await runtime.send_message(chat_id, "remember I prefer trains")
    await events_until_done(runtime, chat_id, tool_turn.run_id)

    # Rebinding to a version with a small budget: the next turn must compact first.
    await runtime.bind_agent(chat_id, "assistant", version=2)
    model.script("final answer")
    before = (await runtime.run_status(chat_id)).last_seq
    ticket = await runtime.send_message(chat_id, "what next?")
    events = await events_until_done(runtime, chat_id, ticket.run_id, after_seq=before)
    compacted = [e for e in events if e.type == "context.compacted"]
    assert len(compacted) >= 1
    kinds = [e.type for e in events if e.run_id == ticket.run_id]
    assert (
        kinds.index("run.started") < kinds.index("context.compacted") < kinds.index("message.delta")
    )
    assert compacted[-1].data["summary_version"] >= 1
    assert compacted[-1].data["tokens_after"] < compacted[-1].data["tokens_before"]

    request = model.requests[-1]
    assert "SUMMARY" in request.section("summary").text
    contents = [m.content for m in request.messages]
    assert contents[-1] == "what next?"
    assert "remember I prefer trains" in contents
    calls = [m for m in request.messages if m.tool_calls]
    assert calls and calls[-1].tool_calls[0].id == "t1"
    following = request.messages[request.messages.index(calls[-1]) + 1]
    assert following.role == "tool" and following.tool_call_id == "t1"
    joined = " ".join(contents)
    assert "question 0" in joined  # the head that set the task stays verbatim
    assert "question 4" not in joined  # the middle lives only in the summary
    session = directory.get_chat(chat_id).session
    assert session.get_compactions()
