"""The model's ``search_chats`` tool searches by words and by meaning (issue 29): a paraphrase
of what the user said in another chat is found; a project's chat finds only its project's;
a temporary chat is never found; assistant replies are not sources."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from backend.chats import Chats
from backend.chats.meaning_search import MeaningSearch
from backend.config import Settings
from backend.models import SEARCH_CHATS_TOOL, ToolCall
from backend.runtime import ChatRuntime
from backend.runtime.agents import DEFAULT_AGENT, AgentRegistry
from backend.runtime.records import RunKind, RunRecord, RunStatus
from backend.runtime.retrieval import Retriever
from tests.meaning.fake_embedder import FakeEmbedder
from tests.support.fixtures import anyio_backend  # noqa: F401  (the async test's loop)
from tests.support.scripted_model import ScriptedModel

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("on_engine")]  # both engines

DOG = "my dog is broken, how can I repair it"
PARAPHRASE = "fixing a damaged puppy"


def say(chats: Chats, chat_id: str, text: str, *, role: str = "user", message_id: str = "m"):
    chats.get_chat(chat_id).session.append_message(
        {"id": message_id, "role": role, "parts": [{"type": "text", "text": text}]}
    )


@pytest.fixture
def chats(tmp_path: Path):
    with Chats(tmp_path / "data", "local") as opened:
        yield opened


@pytest.fixture
def meaning(chats: Chats) -> MeaningSearch:
    return MeaningSearch(chats, FakeEmbedder())


def run_in(chat_id: str) -> RunRecord:
    return RunRecord(
        id="run_1",
        conversation_id=chat_id,
        kind=RunKind.SEND,
        status=RunStatus.RUNNING,
        seq=1,
        user_message_id="u",
        assistant_message_id="a",
        agent_id="default",
        agent_version=1,
        enqueued_at=0,
    )


def texts(items) -> list[str]:
    return [item.text for item in items]


def test_a_paraphrase_is_found_only_by_meaning_and_only_in_the_users_own_words(
    chats: Chats, meaning: MeaningSearch
):
    dog = chats.create_chat("Dog").id
    say(chats, dog, DOG)
    say(chats, dog, "I am sorry to hear that your puppy is hurt", role="assistant", message_id="r")
    meaning.catch_up()
    here = chats.create_chat("Here").id

    assert Retriever(chats).search(run_in(here), PARAPHRASE) == []  # words alone: nothing
    assert texts(Retriever(chats, lambda: meaning).search(run_in(here), PARAPHRASE)) == [DOG]


def test_a_projects_chat_finds_its_projects_chats_only_and_temporary_chats_never(
    chats: Chats, meaning: MeaningSearch
):
    inside, outside = chats.create_chat("In").id, chats.create_chat("Out").id
    say(chats, inside, "my puppy is hurt, can I mend it")
    say(chats, outside, DOG)
    say(chats, chats.temporary.start().id, "the injured hound needs fixing")
    meaning.catch_up()
    retriever = Retriever(chats, lambda: meaning)
    here = run_in(chats.create_chat("Here").id)

    assert texts(retriever.search(here, PARAPHRASE, frozenset({inside}))) == [
        "my puppy is hurt, can I mend it"
    ]
    assert sorted(texts(retriever.search(here, PARAPHRASE))) == sorted(
        [DOG, "my puppy is hurt, can I mend it"]
    )


async def test_the_runtimes_tool_answers_a_paraphrase(
    tmp_path: Path, chats: Chats, meaning: MeaningSearch
):
    agents = AgentRegistry()
    agents.register(replace(DEFAULT_AGENT, version=2, tools=(SEARCH_CHATS_TOOL,)))
    model = ScriptedModel(default="OK.")
    settings = Settings.from_env({"CHATS_DATA_DIR": str(tmp_path / "data")})
    runtime = ChatRuntime(settings, chats, model, agents=agents, meaning=lambda: meaning)
    try:
        dog = chats.create_chat("Dog").id
        say(chats, dog, DOG)
        meaning.catch_up()
        chat_id = chats.create_chat("Titled already").id
        model.script([ToolCall("call_1", SEARCH_CHATS_TOOL, {"query": PARAPHRASE})], "Found.")
        ticket = await runtime.send_message(chat_id, "what did I say about my pet?")
        await runtime.wait_idle(chat_id)
        reply = chats.get_chat(chat_id).session.get_message(ticket.assistant_message_id)
    finally:
        await runtime.aclose()
    (part,) = [p for p in reply["parts"] if p["type"] == f"tool-{SEARCH_CHATS_TOOL}"]
    assert part["state"] == "output-available"
    assert [r["text"] for r in part["output"]["results"]] == [DOG]
