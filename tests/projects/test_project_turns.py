"""A turn in a project chat: the project's instructions after the agent's prompt, its memory,
personal memory by the project's switch, and the context meter's budget for file chunks."""

from __future__ import annotations

import pytest

from backend.models import ToolCall
from backend.runtime.project_context import FILES_BUDGET_TOKENS
from tests.runtime.helpers import events_until_done, make_runtime
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio


async def _turn(runtime, chat_id: str, text: str) -> None:
    ticket = await runtime.send_message(chat_id, text)
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    assert events[-1].type == "run.completed"


async def test_instructions_follow_the_agents_prompt_and_remember_lands_in_the_project(
    tmp_path, chats, projects
):
    chats.append_shared_context("user_memory", "- personal fact\n")
    garden = projects.create("Garden", instructions="Answer as a gardener.")
    chat = projects.create_chat(garden.id)
    loose = chats.create_chat("loose")
    model = ScriptedModel(
        [ToolCall("c1", "remember", {"fact": "grows basil"})], "Noted.", "OK.", "OK."
    )
    runtime = make_runtime(tmp_path, chats, model, projects=projects.turns)
    try:
        await _turn(runtime, chat.id, "remember: I grow basil")
        await _turn(runtime, chat.id, "what do I grow?")
        prompt = model.requests[-1].system_prompt()
        agent_prompt = model.requests[-1].system.strip()
        assert prompt.startswith(agent_prompt)
        assert prompt.index("## Project: Garden\nAnswer as a gardener.") > len(agent_prompt)
        assert "grows basil" in prompt and "personal fact" in prompt  # the switch is on
        projects.set_use_personal_memory(garden.id, False)
        await _turn(runtime, chat.id, "again")
        assert "personal fact" not in model.requests[-1].system_prompt()
        await _turn(runtime, loose.id, "hello")
        loose_prompt = model.requests[-1].system_prompt()
        assert "Garden" not in loose_prompt and "grows basil" not in loose_prompt
        assert "personal fact" in loose_prompt
        meter = await runtime.context_meter(chat.id)
        assert meter.project_files_tokens == FILES_BUDGET_TOKENS
        assert (await runtime.context_meter(loose.id)).project_files_tokens == 0
    finally:
        await runtime.aclose()
    assert projects.memory(garden.id) == "- grows basil\n"
    assert chats.get_shared_context("user_memory") == "- personal fact\n"
