"""Models and agents in a conversation (issue 12, seed 004 "bound agent"), over the real HTTP
client against the fake OpenAI server: what is sent is read from the request body."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.agents import AgentLibrary, AgentSpec
from backend.chats import Chats
from backend.config import Settings
from backend.endpoints import ModelEndpoints
from backend.errors import UnknownModelError
from backend.models import ModelRef, ToolCall
from backend.runtime import ChatRuntime, LibraryAgents, RunStatus
from backend.runtime.failures import INTERRUPTED_ERROR
from tests.runtime.helpers import events_until_done, leave_a_run_running
from tests.support.fake_openai import FakeOpenAI
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

INSTRUCTIONS_V1 = "You are Pirate Pete.\nAnswer in one line, like a pirate. ☠"
INSTRUCTIONS_V2 = "You are Captain Calm. Answer plainly."


@pytest.fixture
def server(fake_openai: FakeOpenAI) -> FakeOpenAI:
    fake_openai.models = ["fake-model", "other-model"]
    return fake_openai


@pytest.fixture
def settings(tmp_path: Path, server: FakeOpenAI) -> Settings:
    return server.settings(tmp_path / "data")


@pytest.fixture
def endpoints(settings: Settings) -> Iterator[ModelEndpoints]:
    service = ModelEndpoints(settings)
    yield service
    service.close()


@pytest.fixture
def library(chats: Chats, endpoints: ModelEndpoints) -> AgentLibrary:
    return AgentLibrary(chats.database, check_model=endpoints.check_model)


@pytest.fixture
async def runtime(
    settings: Settings, chats: Chats, endpoints: ModelEndpoints, library: AgentLibrary
) -> AsyncIterator[ChatRuntime]:
    opened = ChatRuntime(settings, chats, models=endpoints, agents=LibraryAgents(library))
    yield opened
    await opened.aclose()


def pirate(**changes: Any) -> AgentSpec:
    base: dict[str, Any] = {
        "name": "Pirate",
        "instructions": INSTRUCTIONS_V1,
        "temperature": 1.3,
        "max_output_tokens": 300,
        "tools": ("remember", "update_session_state", "search_chats"),
    }
    return AgentSpec(**(base | changes))


async def turn(runtime: ChatRuntime, chat_id: str, text: str) -> dict[str, Any]:
    """Send ``text``; return the stored reply once its run ended."""
    ticket = await runtime.send_message(chat_id, text)
    events = await events_until_done(runtime, chat_id, ticket.run_id)
    assert events[-1].type == "run.completed", events[-1]
    await runtime.wait_idle(chat_id)
    chat = runtime.chats.get_chat(chat_id)
    return chat.session.get_message(ticket.assistant_message_id)


def turn_bodies(server: FakeOpenAI) -> list[dict[str, Any]]:
    """Bodies of the chat requests that answered a turn (not /models, not titling)."""
    return [
        r.body
        for r in server.requests
        if r.path.endswith("/chat/completions")
        and r.body["messages"][-1]["role"] == "user"
        and not r.body["messages"][-1]["content"].startswith("Write a short title")
    ]


def new_chat(chats: Chats) -> str:
    return chats.create_chat("Titled already").id  # no titling request to filter out


class TestWhatIsSent:
    async def test_the_system_prompt_sent_is_exactly_the_bound_versions_instructions(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate())
        chat_id = new_chat(chats)
        await runtime.bind_agent(chat_id, agent.agent_id, policy="pinned")
        await turn(runtime, chat_id, "Where is the treasure?")
        (body,) = turn_bodies(server)
        assert body["messages"][0] == {"role": "system", "content": INSTRUCTIONS_V1}
        assert body["messages"][1] == {"role": "user", "content": "Where is the treasure?"}
        assert (body["temperature"], body["max_tokens"]) == (1.3, 300)
        assert [t["function"]["name"] for t in body["tools"]] == [
            "remember",
            "update_session_state",
            "search_chats",
        ]

    async def test_an_agent_without_tools_offers_none(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate(tools=()))
        chat_id = new_chat(chats)
        await runtime.bind_agent(chat_id, agent.agent_id)
        await turn(runtime, chat_id, "hello")
        assert "tools" not in turn_bodies(server)[0]

    async def test_a_new_chat_starts_with_the_users_default_agent(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate())
        library.set_default(agent.agent_id)
        chat_id = new_chat(chats)
        record = await runtime.get_conversation(chat_id)
        assert (record.agent_id, record.agent_version) == (agent.agent_id, 1)
        await turn(runtime, chat_id, "ahoy")
        assert turn_bodies(server)[0]["messages"][0]["content"] == INSTRUCTIONS_V1


class TestPinnedAndLatest:
    async def test_a_pinned_chat_keeps_its_version_after_a_new_save_and_reports_the_newer_one(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate())
        chat_id = new_chat(chats)
        await runtime.bind_agent(chat_id, agent.agent_id, policy="pinned")
        library.save(agent.agent_id, pirate(instructions=INSTRUCTIONS_V2))
        binding = await runtime.agent_binding(chat_id)
        assert (binding.version, binding.latest_version, binding.update_available) == (1, 2, True)
        await turn(runtime, chat_id, "still a pirate?")
        assert turn_bodies(server)[-1]["messages"][0]["content"] == INSTRUCTIONS_V1

        record = await runtime.use_latest_agent(chat_id)
        assert (record.agent_version_policy, record.agent_version) == ("pinned", 2)
        assert not (await runtime.agent_binding(chat_id)).update_available
        await turn(runtime, chat_id, "and now?")
        assert turn_bodies(server)[-1]["messages"][0]["content"] == INSTRUCTIONS_V2

    async def test_a_chat_following_latest_runs_each_new_save_from_its_next_turn(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate())
        chat_id = new_chat(chats)
        await runtime.bind_agent(chat_id, agent.agent_id, policy="latest")
        await turn(runtime, chat_id, "one")
        library.save(agent.agent_id, pirate(instructions=INSTRUCTIONS_V2))
        assert not (await runtime.agent_binding(chat_id)).update_available
        reply = await turn(runtime, chat_id, "two")
        assert [b["messages"][0]["content"] for b in turn_bodies(server)] == [
            INSTRUCTIONS_V1,
            INSTRUCTIONS_V2,
        ]
        assert reply["metadata"]["agent"] == f"{agent.agent_id}@2"


class TestChoosingTheModel:
    async def test_switching_model_mid_chat_changes_the_next_requests_model(
        self, runtime: ChatRuntime, chats: Chats, server: FakeOpenAI
    ):
        chat_id = new_chat(chats)
        first = await turn(runtime, chat_id, "first")
        record = await runtime.set_model(chat_id, ModelRef("default", "other-model"))
        assert record.model == ModelRef("default", "other-model")
        second = await turn(runtime, chat_id, "second")
        assert [b["model"] for b in turn_bodies(server)] == ["fake-model", "other-model"]
        assert (first["metadata"]["model"], second["metadata"]["model"]) == (
            "fake-model",
            "other-model",
        )
        assert second["metadata"]["endpoint"] == "default"

    async def test_the_agents_model_is_used_unless_the_chat_chose_one(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate(model=ModelRef("default", "other-model")))
        chat_id = new_chat(chats)
        await runtime.bind_agent(chat_id, agent.agent_id)
        assert (await runtime.agent_binding(chat_id)).model == ModelRef("default", "other-model")
        await turn(runtime, chat_id, "one")
        await runtime.set_model(chat_id, ModelRef("default", "fake-model"))
        await turn(runtime, chat_id, "two")
        await runtime.set_model(chat_id, None)
        await turn(runtime, chat_id, "three")
        assert [b["model"] for b in turn_bodies(server)] == [
            "other-model",
            "fake-model",
            "other-model",
        ]

    async def test_a_model_the_endpoint_does_not_list_is_refused_and_the_choice_kept(
        self, runtime: ChatRuntime, chats: Chats
    ):
        chat_id = new_chat(chats)
        await runtime.set_model(chat_id, ModelRef("default", "other-model"))
        with pytest.raises(UnknownModelError):
            await runtime.set_model(chat_id, ModelRef("default", "no-such-model"))
        with pytest.raises(UnknownModelError):
            await runtime.set_model(chat_id, ModelRef("nowhere", "fake-model"))
        assert (await runtime.get_conversation(chat_id)).model == ModelRef("default", "other-model")

    async def test_the_offline_assistant_can_be_chosen_and_labels_its_replies(
        self, runtime: ChatRuntime, chats: Chats, server: FakeOpenAI
    ):
        chat_id = new_chat(chats)
        await runtime.set_model(chat_id, ModelRef("offline", "offline"))
        reply = await turn(runtime, chat_id, "hello")
        assert (reply["metadata"]["model"], reply["metadata"]["endpoint"]) == (
            "offline",
            "offline",
        )
        assert turn_bodies(server) == []


class TestARecoveredReplyNamesItsOwnModel:
    async def test_a_run_recovered_by_another_runtime_keeps_the_model_it_was_claimed_with(
        self, runtime: ChatRuntime, chats: Chats, settings: Settings, endpoints: ModelEndpoints
    ):
        chat = chats.create_chat("Interrupted")
        record = await runtime.get_conversation(chat.id)  # the record exists
        handle = chats.get_chat(chat.id)
        model = ModelRef("elsewhere", "model-of-the-stopped-process")
        leave_a_run_running(chats, chat.id, record, model=model)
        recovering = ChatRuntime(settings, chats, models=endpoints)  # answers with fake-model
        try:
            run = await recovering.get_run(chat.id, "run_gone")  # opening recovers it
        finally:
            await recovering.aclose()
        assert (run.status, run.error) == (RunStatus.FAILED, INTERRUPTED_ERROR)
        reply = handle.session.get_message("a1")
        assert reply["metadata"]["model"] == "model-of-the-stopped-process"
        assert reply["metadata"]["endpoint"] == "elsewhere"
        assert reply["metadata"]["status"] == "failed"


class TestSearchMyChatsTool:
    async def test_an_agent_with_search_on_finds_what_the_user_said_in_another_chat(
        self, settings: Settings, chats: Chats, library: AgentLibrary
    ):
        model = ScriptedModel(default="OK.")
        runtime = ChatRuntime(settings, chats, model, agents=LibraryAgents(library))
        try:
            earlier = new_chat(chats)
            await runtime.send_message(earlier, "Our trip to Lisbon is in May")
            await runtime.wait_idle(earlier)
            agent = library.create(pirate(tools=("search_chats",)))
            chat_id = new_chat(chats)
            await runtime.bind_agent(chat_id, agent.agent_id)
            model.script([ToolCall("call_1", "search_chats", {"query": "lisbon"})], "Found it.")
            reply = await turn(runtime, chat_id, "when is the trip?")
        finally:
            await runtime.aclose()
        (part,) = [p for p in reply["parts"] if p["type"] == "tool-search_chats"]
        assert part["state"] == "output-available"
        assert part["output"]["results"][0]["text"] == "Our trip to Lisbon is in May"
        assert [t.name for t in model.requests[-2].tools] == ["search_chats"]
        assert "Our trip to Lisbon is in May" in model.requests[-1].messages[-1].content


class TestEachChatKeepsItsOwnModel:
    async def test_choosing_a_model_in_one_chat_leaves_the_others_alone(
        self, runtime: ChatRuntime, chats: Chats, library: AgentLibrary, server: FakeOpenAI
    ):
        agent = library.create(pirate())
        one, two = new_chat(chats), new_chat(chats)
        for chat_id in (one, two):
            await runtime.bind_agent(chat_id, agent.agent_id)
        await runtime.set_model(one, ModelRef("default", "other-model"))
        assert (await runtime.agent_binding(two)).model == ModelRef("default", "fake-model")
        await turn(runtime, two, "hello")
        assert turn_bodies(server)[-1]["model"] == "fake-model"
