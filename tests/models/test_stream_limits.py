"""The real HTTP client's limits, against a local server that misbehaves on purpose.

A model server can send anything: wrong JSON types, bytes that are not UTF-8, one endless
line, keep-alive comments forever, a reply that never ends or is 50 MB long. Each must end
in a typed error or a cut reply, in bounded time and bounded memory.
"""

import json
import tracemalloc

import anyio
import pytest

from backend.errors import ModelProtocolError, ModelTimeoutError
from backend.models import (
    REPLY_CUT_REASON,
    Finish,
    ModelMessage,
    ModelRequest,
    OpenAICompatibleProvider,
    TextDelta,
    reply_cut_marker,
)
from tests.support.deadlines import MARGIN_S, WAIT_S, ManualClock
from tests.support.fake_replies import (
    endless,
    huge_line,
    huge_reply,
    keep_alive_forever,
    payloads,
    text,
)

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(messages=(ModelMessage("user", "hello"),))
MiB = 1024 * 1024


def provider(server, **limits):
    return OpenAICompatibleProvider(
        base_url=server.base_url, model="fake-model", connect_timeout_s=MARGIN_S, **limits
    )


async def collect(model, seen=None):
    seen = [] if seen is None else seen
    with anyio.fail_after(WAIT_S):
        async for event in model.stream(REQUEST):
            seen.append(event)
    return seen


async def server_done(server):
    """Wait until the server's handler for the last request has returned."""
    answered = server.requests[-1].answered
    assert await anyio.to_thread.run_sync(answered.wait, WAIT_S)


class TestMalformedChunksOverHTTP:
    @pytest.mark.parametrize(
        "payload",
        [
            json.dumps({"choices": [{"delta": "Hello"}]}),
            json.dumps({"choices": [{"delta": {"tool_calls": [{"function": "f"}]}}]}),
            json.dumps({"choices": [{"delta": {"tool_calls": [{"index": "one"}]}}]}),
            json.dumps({"choices": [], "usage": {"prompt_tokens": "lots"}}),
        ],
    )
    async def test_a_chunk_of_the_wrong_shape_is_a_protocol_error(self, fake_openai, payload):
        fake_openai.script(payloads(payload))
        with pytest.raises(ModelProtocolError):
            await collect(provider(fake_openai))

    async def test_bytes_that_are_not_utf8_are_a_protocol_error(self, fake_openai):
        fake_openai.script(payloads(b'data: {"choices": [{"delta": {"content": "caf\xe9"}}]}\n\n'))
        with pytest.raises(ModelProtocolError, match="UTF-8"):
            await collect(provider(fake_openai))


class TestLineLimit:
    async def test_a_huge_line_fails_at_the_limit_without_buffering_it(self, fake_openai):
        fake_openai.script(huge_line(200 * MiB))
        tracemalloc.start()
        try:
            with pytest.raises(ModelProtocolError, match="longer than 1,048,576 bytes"):
                await collect(provider(fake_openai, max_line_bytes=MiB))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        await server_done(fake_openai)
        assert peak < 16 * MiB  # the whole line would be 200 MiB
        assert fake_openai.requests[-1].sent_bytes < 50 * MiB  # the response was closed

    async def test_a_line_under_the_limit_is_read_normally(self, fake_openai):
        fake_openai.script(huge_line(256 * 1024))
        events = await collect(provider(fake_openai, max_line_bytes=MiB))
        assert len(events[0].text) == 256 * 1024
        assert events[-1] == Finish("stop", None)


class TestTimeouts:
    async def test_keep_alive_comments_do_not_reset_the_idle_timeout(self, fake_openai):
        fake_openai.script(keep_alive_forever("a start", interval_s=0.02))
        seen = []
        # "a start" arrives well inside the limit on any machine; the comments every 20 ms
        # would keep the reply open forever if they reset it (the hang guard).
        with pytest.raises(ModelTimeoutError, match="no data") as caught:
            await collect(provider(fake_openai, idle_timeout_s=MARGIN_S), seen)
        assert caught.value.limit == "idle"
        assert seen == [TextDelta("a start")]

    async def test_a_reply_that_never_ends_hits_the_total_deadline(self, fake_openai):
        fake_openai.script(endless("more ", interval_s=0.02))
        seen = []
        # The first pieces arrive well inside the total limit on any machine; the idle limit,
        # longer than the total one, is never the nearer of the two.
        model = provider(fake_openai, idle_timeout_s=2 * MARGIN_S, total_timeout_s=MARGIN_S)
        with pytest.raises(ModelTimeoutError, match="total") as caught:
            await collect(model, seen)
        assert caught.value.limit == "total"
        assert seen and all(event == TextDelta("more ") for event in seen)
        await server_done(fake_openai)  # the client closed the response

    async def test_a_slow_consumer_does_not_count_as_an_idle_server(self, fake_openai):
        fake_openai.script(text("one", "two", "three"))
        # The limits' clock moves only when the consumer says it took its time, so the first
        # chunk is inside the limit on any machine, and the consumer's delays add up to far
        # more than the limit without real waiting.
        clock = ManualClock()
        model = provider(fake_openai, idle_timeout_s=MARGIN_S, clock=clock)
        seen = []
        with anyio.fail_after(WAIT_S):
            async for event in model.stream(REQUEST):
                seen.append(event)
                clock.advance(2 * MARGIN_S)  # longer than the idle limit, between reads
        assert [e.text for e in seen if isinstance(e, TextDelta)] == ["one", "two", "three"]


class TestReplyLimit:
    async def test_a_50_mb_reply_ends_at_the_cap_with_the_marker(self, fake_openai):
        fake_openai.script(huge_reply(50 * MiB))
        tracemalloc.start()
        try:
            events = await collect(provider(fake_openai, max_reply_bytes=MiB))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        *deltas, marker, finish = events
        assert (
            marker
            == TextDelta(reply_cut_marker(MiB))
            == TextDelta("\n\n[Reply cut: longer than 1 MiB]")
        )
        assert finish == Finish(REPLY_CUT_REASON, None)
        assert sum(len(d.text.encode()) for d in deltas) == MiB
        await server_done(fake_openai)
        assert fake_openai.requests[-1].sent_bytes < 10 * MiB  # reading stopped at the cap
        assert peak < 16 * MiB

    async def test_complete_returns_the_cut_text_with_its_marker(self, fake_openai):
        fake_openai.script(huge_reply(MiB, piece_bytes=1000))
        title = await provider(fake_openai, max_reply_bytes=2500).complete("title this")
        assert title == "y" * 2500 + reply_cut_marker(2500)
