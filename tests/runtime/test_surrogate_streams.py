"""Issue 10: a model stream (or a user) carrying UTF-16 surrogates never strands a run.

A pair split across two ``TextDelta`` chunks is joined when the reply is assembled and shown
whole in the live events; a lone surrogate is stored exactly in the message JSON and as U+FFFD
in every text column (index, preview, title, run error).
"""

from __future__ import annotations

import contextlib

import pytest

from backend.models import ToolCall
from backend.runtime import ChatRuntime, RunStatus
from backend.runtime.pg_store import runtime_store_for
from tests.runtime.helpers import events_until_done, make_runtime
from tests.support.fake_replies import text
from tests.support.scripted_model import ScriptedModel
from tests.support.unicode_text import is_well_formed

pytestmark = pytest.mark.anyio


async def run_to_the_end(tmp_path, chats, model, user_text="hi"):
    """Send one message; return the chat id, the ticket and the run's events."""
    chat_id = chats.create_chat().id
    async with contextlib.aclosing(make_runtime(tmp_path, chats, model)) as runtime:
        ticket = await runtime.send_message(chat_id, user_text)
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        await runtime.wait_idle(chat_id)
        run = await runtime.get_run(chat_id, ticket.run_id)
    return chat_id, ticket, events, run


def reply_text(chats, chat_id, message_id) -> str:
    message = chats.get_chat(chat_id).session.get_message(message_id)
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def streamed(events) -> list[str]:
    return [e.data["text"] for e in events if e.type == "message.delta"]


class TestASurrogatePairSplitAcrossChunks:
    async def test_the_run_commits_with_the_joined_character(self, tmp_path, chats):
        model = ScriptedModel(["smile ", "\ud83d", "\ude00", " done"], complete_with="Smiles")
        chat_id, ticket, events, run = await run_to_the_end(tmp_path, chats, model)
        assert run.status == RunStatus.COMPLETED
        assert events[-1].type == "run.completed"
        assert reply_text(chats, chat_id, ticket.assistant_message_id) == "smile 😀 done"
        assert events[-1].data["text"] == "smile 😀 done"

    async def test_the_live_events_show_the_pair_whole(self, tmp_path, chats):
        model = ScriptedModel(["smile ", "\ud83d", "\ude00", " done"])
        _, _, events, _ = await run_to_the_end(tmp_path, chats, model)
        deltas = streamed(events)
        assert all(is_well_formed(text) for text in deltas)
        assert "".join(deltas) == "smile 😀 done"

    async def test_the_reply_is_searchable_and_previewed(self, tmp_path, chats):
        model = ScriptedModel(["smile ", "\ud83d", "\ude00", " done"])
        chat_id, ticket, _, _ = await run_to_the_end(tmp_path, chats, model)
        hits = chats.search_messages("done")
        assert [h.message_id for h in hits] == [ticket.assistant_message_id]
        assert chats.get_summary(chat_id).last_message_preview == "smile 😀 done"


class TestALoneSurrogateFromTheModel:
    async def test_the_run_commits_and_the_message_keeps_it_exactly(self, tmp_path, chats):
        model = ScriptedModel(["lonely ", "\ud800", " half"])
        chat_id, ticket, events, run = await run_to_the_end(tmp_path, chats, model)
        assert run.status == RunStatus.COMPLETED
        assert reply_text(chats, chat_id, ticket.assistant_message_id) == "lonely \ud800 half"
        assert all(is_well_formed(text) for text in streamed(events))
        assert "".join(streamed(events)) == "lonely \ufffd half"
        assert events[-1].data["text"] == "lonely \ufffd half"  # events are well-formed

    async def test_the_index_and_preview_show_a_replacement_character(self, tmp_path, chats):
        model = ScriptedModel(["lonely ", "\udc00", " half"])
        chat_id, ticket, _, _ = await run_to_the_end(tmp_path, chats, model)
        hits = chats.search_messages("lonely")
        assert [h.message_id for h in hits] == [ticket.assistant_message_id]
        assert chats.get_summary(chat_id).last_message_preview == "lonely \ufffd half"

    async def test_a_generated_title_with_one_is_stored(self, tmp_path, chats):
        model = ScriptedModel("Sure.", complete_with="Odd \ud83d title")
        chat_id, _, _, _ = await run_to_the_end(tmp_path, chats, model)
        assert chats.get_summary(chat_id).title == "Odd \ufffd title"
        store = runtime_store_for(chats.get_chat(chat_id).sessions.database)
        assert store.load_conversation(chat_id).title == "Odd \ufffd title"

    async def test_a_failure_whose_message_holds_one_is_recorded(self, tmp_path, chats):
        model = ScriptedModel(["partial \ud83d", RuntimeError("upstream said \ud800")])
        chat_id, ticket, events, run = await run_to_the_end(tmp_path, chats, model)
        assert run.status == RunStatus.FAILED
        assert run.error == "Unexpected error: RuntimeError: upstream said \ufffd"
        assert events[-1].type == "run.failed"
        assert events[-1].data["error"] == run.error
        message = chats.get_chat(chat_id).session.get_message(ticket.assistant_message_id)
        assert message["metadata"]["status"] == "failed"
        assert reply_text(chats, chat_id, ticket.assistant_message_id) == "partial \ud83d"


class TestToolArgumentsCarryingSurrogates:
    async def test_session_state_holding_one_is_committed_with_the_turn(self, tmp_path, chats):
        call = ToolCall("c1", "update_session_state", {"set": {"note": "half \ud83d pair"}})
        model = ScriptedModel([call], "Noted.")
        chat_id, _, _, run = await run_to_the_end(tmp_path, chats, model)
        assert run.status == RunStatus.COMPLETED
        store = runtime_store_for(chats.get_chat(chat_id).sessions.database)
        assert store.load_state(chat_id).data == {"note": "half \ud83d pair"}

    async def test_a_remembered_fact_holding_one_lands_in_shared_memory(self, tmp_path, chats):
        model = ScriptedModel([ToolCall("c1", "remember", {"fact": "likes \udc00 tea"})], "Ok.")
        _, _, _, run = await run_to_the_end(tmp_path, chats, model)
        assert run.status == RunStatus.COMPLETED
        assert chats.get_shared_context("user_memory") == "- likes \ufffd tea\n"


class TestALoneSurrogateFromTheUser:
    async def test_the_message_is_stored_exactly_and_the_run_completes(self, tmp_path, chats):
        model = ScriptedModel("Got it.")
        chat_id, ticket, _, run = await run_to_the_end(
            tmp_path, chats, model, user_text="odd \udfff input"
        )
        assert run.status == RunStatus.COMPLETED
        assert reply_text(chats, chat_id, ticket.user_message_id) == "odd \udfff input"
        hits = chats.search_messages("input")
        assert [h.message_id for h in hits] == [ticket.user_message_id]


class TestOverTheHttpClient:
    """Real servers escape each half of a pair as ``\\uXXXX`` and may cut between them."""

    async def test_a_pair_split_across_sse_chunks_commits_whole(
        self, fake_openai, tmp_path, chats, closing
    ):
        fake_openai.script(text("smile ", "\ud83d", "\ude00", " done"), text("Smiles"))
        runtime = closing(ChatRuntime(fake_openai.settings(tmp_path / "data"), chats))
        chat_id = chats.create_chat().id
        ticket = await runtime.send_message(chat_id, "hi")
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        assert events[-1].type == "run.completed"
        assert reply_text(chats, chat_id, ticket.assistant_message_id) == "smile 😀 done"

    async def test_a_chat_holding_a_lone_surrogate_can_still_be_answered(
        self, fake_openai, tmp_path, chats, closing
    ):
        fake_openai.script(text("lonely ", "\ud800", " half"), text("T"), text("Next."))
        runtime = closing(ChatRuntime(fake_openai.settings(tmp_path / "data"), chats))
        chat_id = chats.create_chat().id
        await runtime.send_message(chat_id, "first")
        await runtime.wait_idle(chat_id)
        ticket = await runtime.send_message(chat_id, "second")
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        assert events[-1].type == "run.completed", events[-1].data
        assert reply_text(chats, chat_id, ticket.assistant_message_id) == "Next."
        sent = fake_openai.requests[-1].body["messages"]
        assert {"role": "assistant", "content": "lonely \ufffd half"} in sent
