"""What a run in a shared chat may see (issue 28 item 3), through the real runtime wired to
the real sharing store (``Sharing.run_hooks``), on both engines.

A run in a shared chat has the chat, its bound agent and its session state. Not the owner's
shared memory, not quotes of their other chats, not the tools that reach them (``remember``,
``search_chats``), unless the owner switched it on for this chat. A member's own memory never
enters, switch or not. The rule is the chat's, not the sender's: every member reads every
reply, so the owner's own runs in a shared chat follow it too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import pytest

from backend.accounts import User
from backend.chats import Chats
from backend.config import PostgresLocation, Settings
from backend.messages import Author
from backend.models import REMEMBER_TOOL, SEARCH_CHATS_TOOL, UPDATE_STATE_TOOL, ToolCall
from backend.runtime import DEFAULT_AGENT, MEMORY_LABEL, AgentRegistry, ChatRuntime
from backend.runtime.bindings import Bindings
from backend.sharing import ChatRef, Sharing
from tests.runtime.helpers import events_until_done
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

HELPER = dataclasses.replace(
    DEFAULT_AGENT, id="helper", tools=(REMEMBER_TOOL, UPDATE_STATE_TOOL, SEARCH_CHATS_TOOL)
)
OWNER_MEMORY = "- the owner's door code is 4417"
MEMBER_MEMORY = "- pat's bank is Northwind"
PRIVATE_TEXT = "my salary is 91000 kroner"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def engine(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = settings.storage
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", str(value))


@pytest.fixture
def directories(settings: Settings, owner: User, pat: User) -> Iterator[tuple[Chats, Chats]]:
    with Chats(settings.data_dir, owner.id) as mine, Chats(settings.data_dir, pat.id) as theirs:
        mine.set_shared_context(MEMORY_LABEL, OWNER_MEMORY)
        theirs.set_shared_context(MEMORY_LABEL, MEMBER_MEMORY)
        yield mine, theirs


@pytest.fixture
def model() -> ScriptedModel:
    # Every turn asks retrieval for "salary": whatever the owner wrote about it elsewhere.
    return ScriptedModel(retrieval=lambda _text: "salary")


@pytest.fixture
async def runtime(
    settings: Settings,
    sharing: Sharing,
    owner: User,
    directories: tuple[Chats, Chats],
    model: ScriptedModel,
) -> AsyncIterator[ChatRuntime]:
    hooks = sharing.run_hooks(owner.id)
    opened = ChatRuntime(
        settings,
        directories[0],
        model,
        agents=AgentRegistry(HELPER),
        default_agent_id="helper",
        owner_name=owner.username,
        participants=hooks.participants,
        owner_context=hooks.owner_context,
    )
    yield opened
    await opened.aclose()


@pytest.fixture
async def private_chat(runtime: ChatRuntime, directories: tuple[Chats, Chats]) -> str:
    """An unshared chat of the owner's where they wrote something private."""
    chat_id = directories[0].create_chat("Money").id
    await say(runtime, chat_id, PRIVATE_TEXT)
    return chat_id


@pytest.fixture
async def trip(
    runtime: ChatRuntime,
    sharing: Sharing,
    owner: User,
    directories: tuple[Chats, Chats],
    private_chat: str,
) -> ChatRef:
    """The chat the owner shares with pat (participant), with session state of its own."""
    chat_id = directories[0].create_chat("Trip").id
    await runtime.put_session_state(chat_id, {"plan": "paddle north"}, expected_version=0)
    chat = ChatRef(owner_id=owner.id, chat_id=chat_id)
    sharing.share(owner, chat, "pat", "participant")
    return chat


async def say(runtime: ChatRuntime, chat_id: str, text: str, author: Author | None = None):
    ticket = await runtime.send_message(chat_id, text, author=author)
    await events_until_done(runtime, chat_id, ticket.run_id)
    return ticket


def seen(model: ScriptedModel) -> str:
    """Everything the newest request put before the model: system, context, messages."""
    request = model.requests[-1]
    sections = "\n".join(f"[{s.kind}] {s.render()}" for s in request.context)
    messages = "\n".join(m.content for m in request.messages)
    return f"{request.system}\n{sections}\n{messages}"


def kinds(model: ScriptedModel) -> set[str]:
    return {section.kind for section in model.requests[-1].context}


def offered(model: ScriptedModel) -> set[str]:
    return {tool.name for tool in model.requests[-1].tools}


def as_pat(pat: User) -> Author:
    return Author(id=pat.id, name=pat.username)


class TestSwitchedOff:
    async def test_a_members_run_sees_the_chat_its_state_and_nothing_of_the_owner(
        self, runtime, model, trip, pat
    ):
        await say(runtime, trip.chat_id, "what about the salary?", as_pat(pat))
        prompt = seen(model)
        assert "what about the salary?" in prompt
        assert "paddle north" in prompt  # the chat's own session state
        assert kinds(model) == {"session_state"}
        for secret in ("4417", PRIVATE_TEXT, "Northwind"):
            assert secret not in prompt
        assert offered(model) == {UPDATE_STATE_TOOL}

    async def test_the_owners_own_run_in_the_shared_chat_follows_the_same_rule(
        self, runtime, model, trip
    ):
        await say(runtime, trip.chat_id, "and the salary?")
        prompt = seen(model)
        assert kinds(model) == {"session_state"}
        assert "4417" not in prompt and PRIVATE_TEXT not in prompt
        assert offered(model) == {UPDATE_STATE_TOOL}

    async def test_tools_that_reach_the_owner_are_refused_even_when_called_unoffered(
        self, runtime, model, trip, pat, directories
    ):
        model.script(
            [
                ToolCall("c1", SEARCH_CHATS_TOOL, {"query": "salary"}),
                ToolCall("c2", REMEMBER_TOOL, {"fact": "pat was here"}),
            ],
            "Done.",
        )
        ticket = await say(runtime, trip.chat_id, "look it up", as_pat(pat))
        reply = (
            directories[0].get_chat(trip.chat_id).session.get_message(ticket.assistant_message_id)
        )
        results = [p for p in reply["parts"] if p["type"].startswith("tool-")]
        assert [(p["state"], p["errorText"]) for p in results] == [
            ("output-error", f"unknown tool {SEARCH_CHATS_TOOL!r}"),
            ("output-error", f"unknown tool {REMEMBER_TOOL!r}"),
        ]
        assert directories[0].get_shared_context(MEMORY_LABEL) == OWNER_MEMORY  # unchanged
        assert PRIVATE_TEXT not in str(model.requests[-1].messages)

    async def test_the_meter_counts_what_the_run_would_send(self, runtime, sharing, owner, trip):
        off = (await runtime.context_meter(trip.chat_id)).next_turn_tokens
        sharing.set_owner_context(owner, trip, True)
        on = (await runtime.context_meter(trip.chat_id)).next_turn_tokens
        assert on > off  # the owner's memory and two more tools' specs


class TestSwitchedOn:
    async def test_the_owner_lets_runs_use_memory_and_other_chats_and_the_tools_reach_them(
        self, runtime, model, sharing, owner, trip, pat
    ):
        sharing.set_owner_context(owner, trip, True)
        model.script([ToolCall("c1", SEARCH_CHATS_TOOL, {"query": "salary"})], "Found it.")
        await say(runtime, trip.chat_id, "the salary?", as_pat(pat))
        first = model.requests[-2]
        assert {s.kind for s in first.context} == {"memory", "retrieval", "session_state"}
        assert "4417" in seen(model) and PRIVATE_TEXT in seen(model)
        assert offered(model) == {REMEMBER_TOOL, UPDATE_STATE_TOOL, SEARCH_CHATS_TOOL}
        tool_result = next(m for m in model.requests[-1].messages if m.role == "tool")
        assert PRIVATE_TEXT in tool_result.content
        assert "Northwind" not in seen(model)  # a member's own memory never enters

    async def test_switching_it_off_again_applies_to_the_next_run(
        self, runtime, model, sharing, owner, trip
    ):
        sharing.set_owner_context(owner, trip, True)
        await say(runtime, trip.chat_id, "salary")
        assert "memory" in kinds(model)
        sharing.set_owner_context(owner, trip, False)
        await say(runtime, trip.chat_id, "salary")
        assert kinds(model) == {"session_state"}


class TestUnshared:
    async def test_a_chat_shared_with_nobody_runs_as_it_always_did(
        self, runtime, model, directories, private_chat
    ):
        await say(runtime, private_chat, "salary again")
        assert {"memory", "retrieval"} <= kinds(model)
        assert "4417" in seen(model)

    async def test_removing_the_last_member_gives_the_owner_their_context_back(
        self, runtime, model, sharing, owner, trip, pat
    ):
        sharing.remove_member(owner, trip, pat.id)
        await say(runtime, trip.chat_id, "salary")
        assert "memory" in kinds(model)


class TestParticipants:
    async def test_the_conversation_record_follows_the_membership(
        self, runtime, sharing, owner, pat, vic, trip
    ):
        record = await runtime.get_conversation(trip.chat_id)
        assert record.participant_ids == (owner.id, pat.id)
        sharing.share(owner, trip, "vic", "viewer")
        record = await runtime.get_conversation(trip.chat_id)
        assert record.participant_ids == (owner.id, pat.id, vic.id)
        sharing.leave(pat, trip)
        record = await runtime.get_conversation(trip.chat_id)
        assert record.participant_ids == (owner.id, vic.id)


def test_a_switch_that_cannot_be_read_counts_as_off() -> None:
    def broken(_chat_id: str) -> bool:
        raise OSError("the sharing store is down")

    bindings = Bindings.__new__(Bindings)
    bindings._owner_context = broken
    assert bindings.may_use_owner_context("c1") is False
