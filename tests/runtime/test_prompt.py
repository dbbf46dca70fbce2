"""Prompt assembly: structured context, budgeted history, tool pairs never split."""

from dataclasses import replace

from backend.models import ContextItem, ModelMessage, ToolCall
from backend.runtime import DEFAULT_AGENT, ModelSettings
from backend.runtime.prompt import build_request, fit_history, to_model_messages


def user(i, text=None):
    return {"id": f"u{i}", "role": "user", "parts": [{"type": "text", "text": text or f"q{i}"}]}


def assistant(i, text=None, tools=()):
    parts = [
        {
            "type": f"tool-{name}",
            "toolCallId": f"c{i}",
            "state": "output-available",
            "input": {"x": i},
            "output": {"ok": True},
        }
        for name in tools
    ]
    parts.append({"type": "text", "text": text or f"a{i}"})
    return {"id": f"a{i}", "role": "assistant", "parts": parts}


def test_an_assistant_message_with_tools_becomes_call_results_then_text():
    converted = to_model_messages(assistant(1, "done", tools=("remember",)))
    assert converted == [
        ModelMessage("assistant", "", tool_calls=(ToolCall("c1", "remember", {"x": 1}),)),
        ModelMessage("tool", '{"ok": true}', tool_call_id="c1"),
        ModelMessage("assistant", "done"),
    ]


def test_user_attachments_are_mentioned_not_inlined():
    message = {
        "id": "u",
        "role": "user",
        "parts": [
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAAA"},
            {"type": "text", "text": "what is this?"},
        ],
    }
    assert to_model_messages(message) == [ModelMessage("user", "[attached image]\nwhat is this?")]


def test_history_is_trimmed_oldest_first_and_never_splits_a_tool_pair():
    history = []
    for i in range(30):
        history += [user(i, "word " * 50), assistant(i, "word " * 50, tools=("remember",))]
    history.append(user(99, "latest question"))
    messages, _ = fit_history(history, token_budget=400)
    assert messages[-1] == ModelMessage("user", "latest question")
    assert messages[0].role == "user"
    for index, message in enumerate(messages):
        if message.tool_calls:
            assert messages[index + 1].tool_call_id == message.tool_calls[0].id
    assert len(messages) < 10


def test_the_newest_message_is_kept_even_over_budget():
    messages, _ = fit_history([user(1, "x " * 10_000)], token_budget=10)
    assert len(messages) == 1


def test_a_compaction_overlay_becomes_the_summary_section():
    overlay = {
        "id": "compaction_1",
        "role": "assistant",
        "parts": [{"type": "text", "text": "Earlier: planned a trip."}],
    }
    request = build_request(agent=DEFAULT_AGENT, history=[overlay, user(5)])
    assert request.section("summary").text == "Earlier: planned a trip."
    assert [m.content for m in request.messages] == ["q5"]


def test_memory_retrieval_and_state_arrive_as_structured_sections():
    request = build_request(
        agent=DEFAULT_AGENT,
        history=[user(1)],
        memory={"user_memory": "- likes tea\n- lives in Porto\n"},
        retrieved=[ContextItem("we fly May 3", source="Trip", ref="c/m")],
        state={"step": 2},
        chat_id="chat-1",
        run_id="run-1",
    )
    memory = request.section("memory")
    assert [item.text for item in memory.items] == ["likes tea", "lives in Porto"]
    assert request.section("retrieval").items[0].source == "Trip"
    assert '"step": 2' in request.section("session_state").text
    assert request.metadata["chat_id"] == "chat-1"
    assert "likes tea" in request.system_prompt()


def test_empty_placeholders_are_skipped():
    placeholder = {"id": "a0", "role": "assistant", "parts": [], "metadata": {"status": "queued"}}
    messages, _ = fit_history([user(1), placeholder, user(2)], token_budget=1000)
    assert [m.content for m in messages] == ["q1", "q2"]


def test_the_agent_model_settings_reach_the_request():
    agent = replace(DEFAULT_AGENT, model=ModelSettings(model="m-x", temperature=0.1, max_tokens=99))
    request = build_request(agent=agent, history=[user(1)])
    assert (request.model, request.temperature, request.max_tokens) == ("m-x", 0.1, 99)
