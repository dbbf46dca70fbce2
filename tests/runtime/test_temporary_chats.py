"""A temporary chat leaves nothing behind: the model may not write memory, nor title it.

Reading the person's shared memory stays as in any chat (``backend.runtime.temporary_chats``).
"""

from __future__ import annotations

import pytest

from backend.chats.text import PLACEHOLDER_TITLE
from backend.models import REMEMBER_TOOL, ToolCall
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio


async def test_the_model_is_not_offered_remember_and_a_call_to_it_writes_nothing(
    chats, open_runtime
):
    chats.set_shared_context("user_memory", "- likes tea\n")
    chat_id = chats.temporary.start().id
    model = ScriptedModel([ToolCall("c1", REMEMBER_TOOL, {"fact": "secret"})], "Not saved.")
    runtime = open_runtime(model)
    await runtime.send_message(chat_id, "remember my secret")
    await runtime.wait_idle(chat_id)
    assert chats.get_shared_context("user_memory") == "- likes tea\n"
    assert not any(request.has_tool(REMEMBER_TOOL) for request in model.requests)
    # Reading memory is the person's own: the turn still saw it.
    assert [i.text for i in model.requests[0].section("memory").items] == ["likes tea"]
    reply = chats.get_chat(chat_id).session.get_history()[1]
    assert reply["parts"][0]["state"] == "output-error"


async def test_an_ordinary_chat_is_still_offered_remember(chats, open_runtime):
    chat_id = chats.create_chat().id
    model = ScriptedModel("Hello.")
    runtime = open_runtime(model)
    await runtime.send_message(chat_id, "hi")
    await runtime.wait_idle(chat_id)
    assert model.requests[0].has_tool(REMEMBER_TOOL)


async def test_no_model_titles_a_temporary_chat(chats, open_runtime):
    # Even one whose title is the kind an ordinary chat gets replaced after its first reply.
    chat_id = chats.temporary.start(PLACEHOLDER_TITLE).id
    model = ScriptedModel("Lisbon is lovely in May.", complete_with="Trip")
    runtime = open_runtime(model)
    await runtime.send_message(chat_id, "Plan a trip to Lisbon")
    await runtime.wait_idle(chat_id)
    summary = chats.get_summary(chat_id)
    assert summary.title == PLACEHOLDER_TITLE
    assert summary.last_message_preview == "Lisbon is lovely in May."
    assert model.prompts == []
