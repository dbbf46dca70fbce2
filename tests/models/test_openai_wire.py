"""The wire format alone: request bodies and the SSE payload decoder, no sockets."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.errors import ModelProtocolError, ModelStreamError
from backend.models import (
    REPLY_CUT_REASON,
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
    reply_cut_marker,
    request_body,
)


def chunk(delta=None, finish_reason=None, **extra):
    body = {"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}]}
    body.update(extra)
    return json.dumps(body)


def decode(*payloads, end=True, **options):
    decoder = StreamDecoder(**options)
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
        with pytest.raises(ModelStreamError, match="overloaded") as caught:
            decode(json.dumps({"error": {"message": "overloaded"}}), end=False)
        assert not isinstance(caught.value, ModelProtocolError)  # the server said so: not malformed

    def test_tool_arguments_that_are_not_a_json_object_are_an_error(self):
        with pytest.raises(ModelStreamError, match="not JSON"):
            decode(
                chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{bad"}}]}),
                chunk({}, "tool_calls"),
                "[DONE]",
            )


def tool_fragment(**fields):
    return chunk({"tool_calls": [fields]})


class TestMalformedChunks:
    """Every wrong type, at any level, is one typed error with a message naming the field."""

    @pytest.mark.parametrize(
        ("payload", "names"),
        [
            (json.dumps({"choices": "all of them"}), "choices"),
            (json.dumps({"choices": ["a choice"]}), "choice"),
            (json.dumps({"choices": [{"delta": "Hello"}]}), "delta"),
            (chunk({"content": 42}), "content"),
            (chunk({"content": ["a", "list"]}), "content"),
            (chunk({}, finish_reason=7), "finish_reason"),
            (chunk({"tool_calls": "call it"}), "tool_calls"),
            (chunk({"tool_calls": ["call it"]}), "tool-call fragment"),
            (tool_fragment(index=0, id="a", function="remember"), "function"),
            (tool_fragment(index=0, id="a", function={"name": 3}), "name"),
            (tool_fragment(index=0, id=["a"], function={"name": "f"}), "id"),
            (tool_fragment(index=0, function={"name": "f", "arguments": 5}), "arguments"),
            (tool_fragment(index="first", function={"name": "f"}), "index"),
            (tool_fragment(index=1.5, function={"name": "f"}), "index"),
            (tool_fragment(index=True, function={"name": "f"}), "index"),
            (tool_fragment(index=-1, function={"name": "f"}), "index"),
            (json.dumps({"choices": [], "usage": "lots"}), "usage"),
            (json.dumps({"choices": [], "usage": {"prompt_tokens": "many"}}), "prompt_tokens"),
            (json.dumps({"choices": [], "usage": {"completion_tokens": 1e400}}), "completion"),
            (json.dumps({"choices": [], "usage": {"prompt_tokens": -3}}), "prompt_tokens"),
            ('{"choices": [], "usage": {"prompt_tokens": ' + "9" * 5000 + "}}", "JSON"),
            ("[" * 100_000 + "]" * 100_000, "JSON"),
            ("[1, 2]", "object"),
        ],
    )
    def test_a_field_of_the_wrong_type_is_a_protocol_error_naming_it(self, payload, names):
        with pytest.raises(ModelProtocolError, match=names):
            decode(payload, "[DONE]")

    def test_a_protocol_error_is_still_a_stream_error_for_callers_that_catch_those(self):
        with pytest.raises(ModelStreamError):
            decode(json.dumps({"choices": [{"delta": "Hello"}]}), end=False)

    def test_too_many_tool_calls_in_one_response_is_a_protocol_error(self):
        fragments = [tool_fragment(index=n, function={"name": "f"}) for n in range(200)]
        with pytest.raises(ModelProtocolError, match="tool calls"):
            decode(*fragments, "[DONE]")

    def test_null_fields_mean_absent(self):
        events = decode(
            json.dumps({"choices": None, "usage": None, "error": None}),
            json.dumps({"choices": [{"delta": None, "finish_reason": None}]}),
            chunk({"content": None, "tool_calls": None}),
            chunk({"content": "ok"}, "stop"),
            "[DONE]",
        )
        assert events == [TextDelta("ok"), Finish("stop", None)]


# Arbitrary JSON at every level: the generated chunks have the protocol's field names, each
# holding either the right shape (recursively) or any JSON value at all.
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)


def shaped(**fields):
    """Mostly an object with the protocol's ``fields`` (so the deep levels get reached), some
    with any subset of them, some any JSON value at all."""
    complete = st.fixed_dictionaries(fields)
    return st.one_of(complete, complete, st.fixed_dictionaries({}, optional=fields), ANY_JSON)


def listed(items):
    """Mostly a short non-empty list of ``items``, else any JSON value."""
    some = st.lists(items, min_size=1, max_size=2)
    return st.one_of(some, some, ANY_JSON)


def either(value):
    """The expected kind of ``value`` or any JSON value, half and half."""
    return value | ANY_JSON


FUNCTIONS = shaped(name=either(st.text(max_size=5)), arguments=either(st.just('{"a": 1}')))
FRAGMENTS = shaped(
    index=either(st.integers(0, 3)), id=either(st.text(max_size=5)), function=FUNCTIONS
)
DELTAS = shaped(role=ANY_JSON, content=either(st.text()), tool_calls=listed(FRAGMENTS))
CHOICES = shaped(index=ANY_JSON, delta=DELTAS, finish_reason=either(st.just("stop")))
USAGES = shaped(prompt_tokens=either(st.integers(0)), completion_tokens=ANY_JSON)
CHUNKS = st.one_of(
    shaped(choices=listed(CHOICES)),
    shaped(choices=listed(CHOICES), usage=USAGES),
    shaped(choices=ANY_JSON, usage=USAGES, error=ANY_JSON),
)


def assert_valid_events(events):
    *body, last = events
    assert isinstance(last, Finish) and isinstance(last.reason, str)
    if last.usage is not None:
        for count in (last.usage.prompt_tokens, last.usage.completion_tokens):
            assert type(count) is int and count >= 0
    for event in body:
        if isinstance(event, TextDelta):
            assert isinstance(event.text, str) and event.text
            event.text.encode("utf-8", "surrogatepass")  # lone surrogates: storage's rule
        else:
            assert isinstance(event, ToolCall)
            assert isinstance(event.id, str) and isinstance(event.name, str) and event.name
            assert isinstance(event.arguments, dict)
            json.dumps(event.arguments, ensure_ascii=False).encode("utf-8")


# A well-formed stream, then one value anywhere in it (any depth) replaced by any JSON value:
# this reaches every field with every wrong type, which free generation rarely does.
WELL_FORMED = [
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
    {"choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": None}]},
    {
        "choices": [
            {
                "delta": {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "type": "function", "function": {"name": "f"}}
                    ]
                }
            }
        ]
    },
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}}]},
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}]},
    {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
    {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
]


def paths(value, prefix=()):
    """Every location inside ``value``, as a tuple of keys and indexes."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def replaced(value, path, new):
    if not path:
        return new
    copy = value.copy()
    copy[path[0]] = replaced(value[path[0]], path[1:], new)
    return copy


def decode_or_protocol_error(values, **options):
    """The events of ``values`` (JSON-encoded) then ``[DONE]``; ``None`` on a protocol error."""
    decoder = StreamDecoder(**options)
    events = []
    try:
        for value in values:
            events += decoder.feed(json.dumps(value))
        return events + decoder.feed("[DONE]")
    except ModelProtocolError:
        return None
    except ModelStreamError:  # the one other outcome: the server itself reported a failure
        assert any(isinstance(v, dict) and v.get("error") is not None for v in values)
        return None


class TestAnyInput:
    """The decoder answers anything with valid events or a ``ModelProtocolError``, never an
    ``AttributeError``/``ValueError``/``OverflowError`` from inside."""

    @settings(max_examples=400, deadline=None)
    @given(st.lists(CHUNKS, max_size=5), st.integers(min_value=1, max_value=64))
    def test_arbitrary_chunks_give_valid_events_or_a_protocol_error(self, chunks, max_reply):
        events = decode_or_protocol_error(chunks, max_reply_bytes=max_reply)
        if events is not None:
            assert_valid_events(events)

    @settings(max_examples=500, deadline=None)
    @given(st.data())
    def test_any_value_anywhere_in_a_good_stream_gives_valid_events_or_a_protocol_error(self, data):
        position = data.draw(st.integers(0, len(WELL_FORMED) - 1), label="chunk")
        path = data.draw(st.sampled_from(list(paths(WELL_FORMED[position]))), label="path")
        stream = list(WELL_FORMED)
        stream[position] = replaced(stream[position], path, data.draw(ANY_JSON, label="value"))
        events = decode_or_protocol_error(stream)
        if events is not None:
            assert_valid_events(events)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.text(), max_size=4))
    def test_arbitrary_text_payloads_give_valid_events_or_a_protocol_error(self, payloads):
        decoder = StreamDecoder()
        try:
            for payload in payloads:
                decoder.feed(payload)
        except ModelProtocolError:
            pass


class TestReplyCap:
    def test_text_past_the_cap_is_cut_with_the_marker_and_a_cut_finish(self):
        decoder = StreamDecoder(max_reply_bytes=10)
        events = decoder.feed(chunk({"content": "12345678"}))
        events += decoder.feed(chunk({"content": "abcdef"}))
        assert events == [
            TextDelta("12345678"),
            TextDelta("ab"),
            TextDelta(reply_cut_marker(10)),
            Finish(REPLY_CUT_REASON, None),
        ]
        assert decoder.done
        assert decoder.feed(chunk({"content": "more"})) == []

    def test_a_reply_of_exactly_the_cap_is_not_cut(self):
        events = decode(chunk({"content": "1234567890"}, "stop"), "[DONE]", max_reply_bytes=10)
        assert events == [
            TextDelta("1234567890"),
            Finish("stop", None),
        ]

    def test_the_cap_counts_utf8_bytes_and_never_splits_a_character(self):
        decoder = StreamDecoder(max_reply_bytes=5)
        events = decoder.feed(chunk({"content": "ééé"}))  # 6 bytes
        assert events[0] == TextDelta("éé")
        assert events[-1] == Finish(REPLY_CUT_REASON, None)

    def test_tool_call_arguments_count_toward_the_cap_and_a_cut_reply_runs_no_tools(self):
        decoder = StreamDecoder(max_reply_bytes=16)
        events = decoder.feed(tool_fragment(index=0, id="a", function={"name": "f"}))
        events += decoder.feed(tool_fragment(index=0, function={"arguments": '{"x": "' + "y" * 40}))
        assert not any(isinstance(e, ToolCall) for e in events)
        assert events[-1] == Finish(REPLY_CUT_REASON, None)

    def test_the_marker_names_the_limit_in_human_units(self):
        assert reply_cut_marker(1024 * 1024) == "\n\n[Reply cut: longer than 1 MiB]"
        assert reply_cut_marker(1536) == "\n\n[Reply cut: longer than 1.5 KiB]"
        assert reply_cut_marker(100) == "\n\n[Reply cut: longer than 100 bytes]"
