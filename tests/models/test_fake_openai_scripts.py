"""The fake model server's scripted replies (tests/support/fake_openai.py): a reply scripted
for one turn is taken by that turn, whatever other request reaches the server first (the
browser stories share one server; an earlier story's title request arrives when it likes)."""

from __future__ import annotations

import pytest

from backend.models import ModelMessage, ModelRequest, OpenAICompatibleProvider, TextDelta
from tests.support.deadlines import MARGIN_S
from tests.support.fake_replies import text

pytestmark = pytest.mark.anyio


async def reply_to(server, words: str) -> str:
    model = OpenAICompatibleProvider(
        base_url=server.base_url, model="fake-model", api_key="k", connect_timeout_s=MARGIN_S
    )
    request = ModelRequest(system="sys", messages=(ModelMessage("user", words),))
    return "".join([e.text async for e in model.stream(request) if isinstance(e, TextDelta)])


async def test_a_reply_scripted_for_a_turn_waits_for_that_turn(fake_openai):
    fake_openai.default = text("the default")
    fake_openai.script(text("for the question"), asked="the question")

    assert await reply_to(fake_openai, "a title request, first") == "the default"
    assert await reply_to(fake_openai, "the question") == "for the question"
    assert fake_openai.pending == 0


async def test_replies_scripted_for_anyone_go_in_order_to_whoever_asks(fake_openai):
    fake_openai.default = text("the default")
    fake_openai.script(text("one"), text("two"))

    assert [await reply_to(fake_openai, f"turn {n}") for n in range(3)] == [
        "one",
        "two",
        "the default",
    ]
