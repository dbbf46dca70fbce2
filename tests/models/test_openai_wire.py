"""The wire format alone: request bodies and the SSE payload decoder, no sockets."""

import json

import pytest

from backend.errors import ModelStreamError
from backend.models import (
    ContextItem,
    ContextSection,
    Finish,
    ModelMessage,
    ModelRequest,
    StreamDecoder,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
    request_body,
)


def chunk(delta=None, finish_reason=None, **extra):
    body = {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]}
    body.update(extra)
    return json.dumps(body)


def decode(*payloads, end=True):
    decoder = StreamDecoder()
    events = []
    for payload in payloads:
        events += decoder.feed(payload)
    if end:
        events += decoder.finish()
    return events


class TestRequestBody:
    def test_system_prompt_and_context_sections_become_one_system_message(self):
        request = ModelRequest(
            system="Be brief.",
            context=(
                ContextSection("memory", "Memory", items=(ContextItem("likes tea"),)),
                ContextSection("summary", "Earlier", text=""),
            ),
            messages=(ModelMessage("user", "hi"),),
        )
        body = request_body(request, default_model="m1")
        assert body["model"] == "m1"
        assert body["stream"] is True
        assert body["messages"][0] == {
            "role": "system",
            "content": "Be brief.\n\n## Memory\n- likes tea",
        }
        assert body["messages"][1] == {"role": "user", "content": "hi"}

    def test_tool_turns_are_rendered_as_the_protocol_expects(self):
        call = ToolCall("c1", "remember", {"fact": "x"})
        request = ModelRequest(
            messages=(
                ModelMessage("user", "remember x"),
                ModelMessage("assistant", "", tool_calls=(call,)),
                ModelMessage("tool", '{"ok": true}', tool_call_id="c1"),
            ),
            tools=(ToolSpec("remember", "Save a fact", {"type": "object"}),),
            model="override",
            temperature=0.2,
        )
        body = request_body(request, default_model="m1")
        assert body["model"] == "override"
        assert body["temperature"] == 0.2
        assistant, tool = body["messages"][1], body["messages"][2]
        assert assistant["content"] is None
        assert assistant["tool_calls"][0]["function"] == {
            "name": "remember",
            "arguments": '{"fact": "x"}',
        }
        assert tool == {"role": "tool", "content": '{"ok": true}', "tool_call_id": "c1"}
        assert body["tools"][0]["function"]["name"] == "remember"


class TestStreamDecoder:
    def test_text_deltas_arrive_in_order_and_the_finish_comes_last(self):
        events = decode(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({}, "stop"),
            "[DONE]",
        )
        assert events == [TextDelta("Hel"), TextDelta("lo"), Finish("stop", None)]

    def test_tool_call_fragments_are_joined_by_index(self):
        events = decode(
            chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}),
            chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x"'}}]}),
            chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
            chunk({}, "tool_calls"),
            "[DONE]",
        )
        assert events == [
            ToolCall("a", "f", {"x": 1}),
            ToolCall("b", "g", {}),
            Finish("tool_calls", None),
        ]

    def test_usage_on_a_trailing_chunk_is_reported_on_the_finish(self):
        events = decode(
            chunk({"content": "x"}, "stop"),
            json.dumps({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}),
            "[DONE]",
        )
        assert events[-1] == Finish("stop", Usage(3, 1))

    def test_a_finish_reason_without_done_is_a_complete_response(self):
        assert decode(chunk({"content": "x"}, "stop"))[-1] == Finish("stop", None)

    def test_nothing_after_done_is_read(self):
        decoder = StreamDecoder()
        decoder.feed(chunk({}, "stop"))
        decoder.feed("[DONE]")
        assert decoder.feed("not json at all") == []

    def test_a_stream_that_ends_before_finishing_is_an_error(self):
        with pytest.raises(ModelStreamError, match="ended before"):
            decode(chunk({"content": "partial"}))

    def test_a_payload_that_is_not_json_is_an_error(self):
        with pytest.raises(ModelStreamError, match="not JSON"):
            decode("{oops", end=False)

    def test_an_error_object_in_the_stream_is_an_error(self):
        with pytest.raises(ModelStreamError, match="overloaded"):
            decode(json.dumps({"error": {"message": "overloaded"}}), end=False)

    def test_tool_arguments_that_are_not_a_json_object_are_an_error(self):
        with pytest.raises(ModelStreamError, match="not JSON"):
            decode(
                chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{bad"}}]}),
                chunk({}, "tool_calls"),
                "[DONE]",
            )
