"""The real HTTP client against a real local server speaking the streaming protocol."""

import threading
from dataclasses import replace

import anyio
import pytest

from backend.config import Settings
from backend.errors import ModelError, ModelHTTPError, ModelStreamError, ModelTimeoutError
from backend.models import (
    Finish,
    ModelMessage,
    ModelRequest,
    OfflineAssistant,
    OpenAICompatibleProvider,
    TextDelta,
    ToolCall,
    ToolSpec,
    provider_from_settings,
)
from tests.support.deadlines import MARGIN_S, WAIT_S
from tests.support.fake_replies import cut, hang, held, http_error, malformed, text, tool_call

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(system="sys", messages=(ModelMessage("user", "hello"),))


def provider(server, *, idle_timeout_s=MARGIN_S):
    return OpenAICompatibleProvider(
        base_url=server.base_url,
        model="fake-model",
        api_key="k",
        connect_timeout_s=MARGIN_S,
        idle_timeout_s=idle_timeout_s,
    )


async def collect(model, request=REQUEST):
    return [event async for event in model.stream(request)]


async def test_a_streamed_reply_arrives_as_ordered_deltas_then_a_finish(fake_openai):
    fake_openai.script(text("Hel", "lo", " world", delay_s=0.01, usage={"prompt_tokens": 5}))
    events = await collect(provider(fake_openai))
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo", " world"]
    assert isinstance(events[-1], Finish)
    assert events[-1].reason == "stop"
    assert events[-1].usage.prompt_tokens == 5
    sent = fake_openai.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == "Bearer k"
    assert sent.body["stream"] is True
    assert sent.body["model"] == "fake-model"
    assert sent.body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hello"},
    ]


async def test_deltas_are_delivered_as_they_arrive_not_after_the_whole_reply(fake_openai):
    # The server sends the rest only once the test has the first delta: a client that
    # waited for the whole reply would never see it (and the hang guard would fail the test).
    rest_may_come = threading.Event()
    fake_openai.script(held(["first"], rest_may_come, ["second"]))
    stream = provider(fake_openai).stream(REQUEST)
    with anyio.fail_after(WAIT_S):
        first = await anext(stream)
        rest_may_come.set()
        rest = [e async for e in stream]
    assert first == TextDelta("first")
    assert TextDelta("second") in rest


async def test_tool_calls_are_assembled_from_fragments(fake_openai):
    fake_openai.script(tool_call("remember", {"fact": "I like green tea"}, call_id="c9"))
    request = ModelRequest(
        messages=(ModelMessage("user", "remember that I like green tea"),),
        tools=(ToolSpec("remember", "Save a fact", {"type": "object"}),),
    )
    events = await collect(provider(fake_openai), request)
    assert events == [
        ToolCall("c9", "remember", {"fact": "I like green tea"}),
        Finish("tool_calls", None),
    ]
    assert fake_openai.requests[0].body["tools"][0]["function"]["name"] == "remember"


async def test_an_http_500_raises_a_model_http_error_with_status_and_body(fake_openai):
    fake_openai.script(http_error(500, "model crashed"))
    with pytest.raises(ModelHTTPError) as caught:
        await collect(provider(fake_openai))
    assert caught.value.status_code == 500
    assert "model crashed" in caught.value.body


async def test_a_server_that_goes_silent_mid_stream_raises_a_timeout(fake_openai):
    fake_openai.script(hang("partial", seconds=WAIT_S))  # until the server stops
    seen = []
    with pytest.raises(ModelTimeoutError):
        # "partial" arrives well inside the idle limit on any machine; the silence is longer.
        async for event in provider(fake_openai).stream(REQUEST):
            seen.append(event)
    assert seen == [TextDelta("partial")]


async def test_a_server_that_never_sends_headers_raises_a_timeout(fake_openai):
    fake_openai.script(text("late", first_delay_s=WAIT_S))  # until the server stops
    with pytest.raises(ModelTimeoutError):
        await collect(provider(fake_openai, idle_timeout_s=0.3))  # any limit below the wait


async def test_a_stream_cut_mid_body_raises_a_stream_error_after_the_partial_text(fake_openai):
    fake_openai.script(cut("par", "tial"))
    seen = []
    with pytest.raises(ModelStreamError):
        async for event in provider(fake_openai).stream(REQUEST):
            seen.append(event)
    assert seen == [TextDelta("par"), TextDelta("tial")]


async def test_a_body_that_ends_cleanly_without_done_or_finish_raises_a_stream_error(fake_openai):
    fake_openai.script(cut("partial", clean=True))
    with pytest.raises(ModelStreamError, match="ended before"):
        await collect(provider(fake_openai))


async def test_a_payload_that_is_not_json_raises_a_stream_error(fake_openai):
    fake_openai.script(malformed("ok so far"))
    with pytest.raises(ModelStreamError, match="not JSON"):
        await collect(provider(fake_openai))


async def test_an_unreachable_server_raises_a_model_error(fake_openai):
    port = fake_openai.port
    fake_openai.stop()
    model = OpenAICompatibleProvider(base_url=f"http://127.0.0.1:{port}/v1", model="m")
    with pytest.raises(ModelError, match="cannot reach"):
        await collect(model)


async def test_complete_joins_the_streamed_text(fake_openai):
    fake_openai.script(text("A short ", "title"))
    assert await provider(fake_openai).complete("title this") == "A short title"


def test_settings_choose_the_http_client_or_the_offline_assistant(fake_openai, tmp_path):
    settings = replace(
        fake_openai.settings(tmp_path, timeout_s=7),
        model_total_timeout_s=70,
        model_max_reply_bytes=1000,
        model_max_line_bytes=5000,
    )
    online = provider_from_settings(settings)
    assert isinstance(online, OpenAICompatibleProvider)
    assert online.base_url == fake_openai.base_url
    assert online.idle_timeout_s == 7
    assert online.total_timeout_s == 70
    assert (online.max_reply_bytes, online.max_line_bytes) == (1000, 5000)
    assert online.offline is False
    assert online.name == "fake-model"
    assert "fake-model" in online.label
    offline = provider_from_settings(Settings.from_env({}))
    assert isinstance(offline, OfflineAssistant)
    assert offline.offline is True


class TestServersThatRefuseTheUsageRequest:
    """Strict servers reject fields they do not know; the reply must still come."""

    REFUSAL = "Unrecognized request argument supplied: stream_options"

    async def test_the_request_is_sent_again_without_it_and_the_reply_arrives(self, fake_openai):
        fake_openai.script(http_error(400, self.REFUSAL), text("Hi", " there"))
        events = await collect(provider(fake_openai))
        assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hi", " there"]
        first, second = (r.body for r in fake_openai.requests)
        assert "stream_options" in first and "stream_options" not in second
        assert {k: v for k, v in first.items() if k != "stream_options"} == second

    async def test_a_provider_that_learned_the_refusal_does_not_offer_it_again(self, fake_openai):
        fake_openai.script(http_error(400, self.REFUSAL), text("one"), text("two"))
        model = provider(fake_openai)
        await collect(model)
        await collect(model)
        assert ["stream_options" in r.body for r in fake_openai.requests] == [True, False, False]

    async def test_other_client_errors_are_not_retried(self, fake_openai):
        fake_openai.script(http_error(400, "messages: must not be empty"))
        with pytest.raises(ModelHTTPError) as caught:
            await collect(provider(fake_openai))
        assert caught.value.status_code == 400
        assert len(fake_openai.requests) == 1

    async def test_a_second_refusal_is_an_error_not_a_loop(self, fake_openai):
        fake_openai.script(http_error(400, self.REFUSAL), http_error(400, self.REFUSAL))
        with pytest.raises(ModelHTTPError):
            await collect(provider(fake_openai))
        assert len(fake_openai.requests) == 2
