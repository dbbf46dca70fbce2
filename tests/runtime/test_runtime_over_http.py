"""The runtime over the real HTTP client, against a local server speaking the OpenAI protocol.

Every failure mode must keep what the user wrote, record the run as failed with a sentence a
person can read, and keep any partial reply, marked.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from backend.models import OpenAICompatibleProvider, reply_cut_marker
from backend.runtime import ChatRuntime, RunStatus
from tests.runtime.helpers import events_until_done
from tests.support.deadlines import MARGIN_S, WAIT_S
from tests.support.fake_replies import cut, hang, http_error, huge_reply, text, tool_call

pytestmark = pytest.mark.anyio


def runtime_for(fake_openai, tmp_path, chats, *, timeout_s=WAIT_S):
    settings = fake_openai.settings(tmp_path / "data", timeout_s=timeout_s)
    runtime = ChatRuntime(settings, chats)
    assert isinstance(runtime.model, OpenAICompatibleProvider)
    return runtime


async def send(runtime, chats, text_):
    chat_id = chats.create_chat().id
    ticket = await runtime.send_message(chat_id, text_)
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    session = chats.get_chat(chat_id).session
    return chat_id, ticket, events, session


def assert_user_message_kept(session, ticket, text_):
    stored = session.get_message(ticket.user_message_id)
    assert stored["parts"] == [{"type": "text", "text": text_}]


async def test_a_streamed_reply_is_persisted_and_titles_the_chat(
    fake_openai, tmp_path, chats, closing
):
    fake_openai.script(text("Lisbon ", "in May ", "is mild."), text("Lisbon in May"))
    runtime = closing(runtime_for(fake_openai, tmp_path, chats))
    chat_id, ticket, events, session = await send(runtime, chats, "Weather in Lisbon?")
    assert events[-1].type == "run.completed"
    deltas = [e.data["text"] for e in events if e.type == "message.delta"]
    assert deltas == ["Lisbon ", "in May ", "is mild."]
    assert_user_message_kept(session, ticket, "Weather in Lisbon?")
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["parts"] == [{"type": "text", "text": "Lisbon in May is mild."}]
    await runtime.wait_idle(chat_id)
    assert chats.get_summary(chat_id).title == "Lisbon in May"
    sent = fake_openai.requests[0].body
    assert sent["messages"][-1] == {"role": "user", "content": "Weather in Lisbon?"}
    assert {t["function"]["name"] for t in sent["tools"]} == {"remember", "update_session_state"}


async def test_a_tool_call_round_trip_is_stored_as_message_parts(
    fake_openai, tmp_path, chats, closing
):
    fake_openai.script(
        tool_call("remember", {"fact": "I am vegetarian"}, call_id="call_7"),
        text("Noted: ", "vegetarian."),
        text("Diet"),
    )
    runtime = closing(runtime_for(fake_openai, tmp_path, chats))
    _chat_id, ticket, events, session = await send(runtime, chats, "remember I'm vegetarian")
    tool_events = [e.data for e in events if e.type == "tool.call"]
    assert [(d["toolCallId"], d["state"]) for d in tool_events] == [
        ("call_7", "input-available"),
        ("call_7", "output-available"),
    ]
    assert events[-1].type == "run.completed"
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["parts"] == [
        {
            "type": "tool-remember",
            "toolCallId": "call_7",
            "state": "output-available",
            "input": {"fact": "I am vegetarian"},
            "output": {"saved": True, "fact": "I am vegetarian"},
        },
        {"type": "text", "text": "Noted: vegetarian."},
    ]
    assert "I am vegetarian" in chats.get_shared_context("user_memory")
    # The second request carried the call and its result back to the model.
    follow_up = fake_openai.requests[1].body["messages"]
    assert follow_up[-2]["tool_calls"][0]["id"] == "call_7"
    assert follow_up[-1] == {
        "role": "tool",
        "content": '{"saved": true, "fact": "I am vegetarian"}',
        "tool_call_id": "call_7",
    }


async def test_an_http_500_fails_the_run_and_keeps_the_user_message(
    fake_openai, tmp_path, chats, closing
):
    fake_openai.script(http_error(500, "CUDA out of memory"))
    runtime = closing(runtime_for(fake_openai, tmp_path, chats))
    chat_id, ticket, events, session = await send(runtime, chats, "hello")
    failed = events[-1]
    assert failed.type == "run.failed"
    assert failed.data["error_type"] == "ModelHTTPError"
    assert failed.data["error"] == "The model server answered HTTP 500: CUDA out of memory"
    assert_user_message_kept(session, ticket, "hello")
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["metadata"]["status"] == "failed"
    assert reply["parts"] == []
    assert (await runtime.get_run(chat_id, ticket.run_id)).status == RunStatus.FAILED


async def test_a_silent_server_times_out_and_keeps_the_partial_reply(
    fake_openai, tmp_path, chats, closing
):
    fake_openai.script(hang("The answer ", "starts", seconds=WAIT_S))  # until the server stops
    # The first two chunks arrive well inside the idle limit on any machine; the stall is longer.
    runtime = closing(runtime_for(fake_openai, tmp_path, chats, timeout_s=MARGIN_S))
    _chat_id, ticket, events, session = await send(runtime, chats, "slow question")
    assert events[-1].type == "run.failed"
    assert events[-1].data["error_type"] == "ModelTimeoutError"
    assert events[-1].data["partial"] is True
    assert_user_message_kept(session, ticket, "slow question")
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["parts"] == [{"type": "text", "text": "The answer starts"}]
    assert reply["metadata"]["status"] == "failed"
    assert "did not answer in time" in reply["metadata"]["error"]


async def test_a_cut_stream_fails_the_run_and_keeps_the_partial_reply(
    fake_openai, tmp_path, chats, closing
):
    fake_openai.script(cut("Half ", "an answer"))
    runtime = closing(runtime_for(fake_openai, tmp_path, chats))
    _chat_id, ticket, events, session = await send(runtime, chats, "tell me")
    assert events[-1].type == "run.failed"
    assert events[-1].data["error_type"] == "ModelStreamError"
    assert_user_message_kept(session, ticket, "tell me")
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["parts"] == [{"type": "text", "text": "Half an answer"}]
    assert reply["metadata"]["status"] == "failed"


async def test_after_a_failure_the_next_message_is_answered(fake_openai, tmp_path, chats, closing):
    fake_openai.script(http_error(503, "loading model"), text("Ready now."), text("Title"))
    runtime = closing(runtime_for(fake_openai, tmp_path, chats))
    chat_id, first, _events, session = await send(runtime, chats, "first try")
    second = await runtime.send_message(chat_id, "second try")
    events = await events_until_done(runtime, chat_id, second.run_id)
    assert events[-1].type == "run.completed"
    # The failed turn stays in the transcript, marked; the model saw the user's first message.
    sent = fake_openai.requests[1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == ["first try", "second try"]
    assert session.get_message(first.assistant_message_id)["metadata"]["status"] == "failed"


async def test_a_reply_past_the_size_limit_is_stored_cut_with_its_marker(
    fake_openai,
    tmp_path,
    chats,
    closing,
):
    limit = 64 * 1024
    fake_openai.script(huge_reply(50 * 1024 * 1024), text("Endless"))
    settings = replace(fake_openai.settings(tmp_path / "data"), model_max_reply_bytes=limit)
    runtime = closing(ChatRuntime(settings, chats))
    _chat_id, ticket, events, session = await send(runtime, chats, "write forever")
    assert events[-1].type == "run.completed"
    reply = session.get_message(ticket.assistant_message_id)
    assert reply["parts"] == [{"type": "text", "text": "y" * limit + reply_cut_marker(limit)}]
    assert reply["metadata"]["status"] == "completed"
