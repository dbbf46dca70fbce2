"""The runtime's public API against the real directory (``backend.chats.Chats``).

Streaming and its events, late subscribers, cancel, regenerate and edit branches, titles and
previews, shared memory, recovery after a crash, and the offline assistant end to end.
"""

from __future__ import annotations

import asyncio

import pytest

from backend.errors import (
    ChatNotFoundError,
    InputTooLargeError,
    InvalidInputError,
    NotFoundError,
)
from backend.models import OfflineAssistant, ToolCall
from backend.runtime import ChatRuntime, RunStatus
from backend.runtime.pg_store import runtime_store_for
from tests.runtime.helpers import (
    TERMINAL,
    die_mid_run,
    events_until_done,
    make_runtime,
    settings,
    texts,
)
from tests.support.deadlines import WAIT_S, until
from tests.support.scripted_model import Hold, ScriptedModel

pytestmark = pytest.mark.anyio


def session_of(chats, chat_id):
    return chats.get_chat(chat_id).session


class TestStreaming:
    async def test_a_reply_streams_as_ordered_events_and_is_persisted(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("Hello there, friend."))
        ticket = await runtime.send_message(chat_id, "hi")
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        kinds = [e.type for e in events]
        assert kinds[:2] == ["run.queued", "run.started"]
        assert kinds[-1] == "run.completed"
        assert set(kinds[2:-1]) == {"message.delta"}
        streamed = "".join(e.data["text"] for e in events if e.type == "message.delta")
        assert streamed == "Hello there, friend."
        assert events[-1].data["text"] == streamed
        reply = session_of(chats, chat_id).get_message(ticket.assistant_message_id)
        assert reply["parts"] == [{"type": "text", "text": streamed}]
        assert reply["metadata"]["status"] == "completed"
        assert reply["metadata"]["runId"] == ticket.run_id

    async def test_a_late_subscriber_replays_from_any_sequence_number_then_follows_live(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel(["one ", "two ", hold, "three"]))
        ticket = await runtime.send_message(chat_id, "count")
        await hold.reached()
        first_tab = (await runtime.run_status(chat_id)).last_seq
        assert first_tab >= 4  # queued, started, two deltas

        replaying = asyncio.Event()
        task = asyncio.ensure_future(
            events_until_done(runtime, chat_id, ticket.run_id, after_seq=2, subscribed=replaying)
        )
        await asyncio.wait_for(replaying.wait(), WAIT_S)
        hold.release()
        replayed = await task
        assert replayed[0].seq == 3
        assert [e.data.get("text") for e in replayed if e.type == "message.delta"] == [
            "one ",
            "two ",
            "three",
        ]
        assert replayed[-1].type == "run.completed"

    @pytest.mark.sqlite_only  # about the chat's file itself
    async def test_watching_a_new_chat_does_not_create_its_file(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("hi"))
        watching = asyncio.ensure_future(anext(runtime.subscribe(chat_id)))
        await until(lambda: runtime.footprint().watchers == 1)  # it watches: no file yet
        assert list((tmp_path / "data" / "user1").rglob(f"{chat_id}*.sqlite")) == []
        ticket = await runtime.send_message(chat_id, "hello")
        first = await asyncio.wait_for(watching, WAIT_S)
        assert (first.type, first.run_id) == ("run.queued", ticket.run_id)
        await runtime.wait_idle(chat_id)
        assert list((tmp_path / "data" / "user1").rglob(f"{chat_id}*.sqlite"))  # now it does

    async def test_the_user_message_is_stored_before_the_model_is_called(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel([hold, "ok"]))
        ticket = await runtime.send_message(chat_id, "keep me")
        stored = session_of(chats, chat_id).get_message(ticket.user_message_id)
        assert stored["parts"] == [{"type": "text", "text": "keep me"}]
        await hold.reached()
        placeholder = session_of(chats, chat_id).get_message(ticket.assistant_message_id)
        assert placeholder["parts"] == []
        assert placeholder["metadata"]["status"] == "running"
        hold.release()
        await runtime.wait_idle(chat_id)

    async def test_images_are_stored_as_file_parts_with_the_text(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("A cat."))
        url = "data:image/png;base64,iVBORw0KGgo="
        ticket = await runtime.send_message(chat_id, "what is this?", images=[url])
        await runtime.wait_idle(chat_id)
        stored = session_of(chats, chat_id).get_message(ticket.user_message_id)
        assert stored["parts"] == [
            {"type": "file", "mediaType": "image/png", "url": url},
            {"type": "text", "text": "what is this?"},
        ]

    async def test_invalid_sends_are_refused_before_anything_is_stored(
        self, tmp_path, chats, closing
    ):
        chat_id = chats.create_chat().id
        runtime = closing(
            ChatRuntime(settings(tmp_path, CHATS_MAX_MESSAGE_BYTES="10"), chats, ScriptedModel())
        )
        with pytest.raises(InputTooLargeError):
            await runtime.send_message(chat_id, "x" * 11)
        with pytest.raises(InvalidInputError):
            await runtime.send_message(chat_id, "   ")
        gone = chats.create_chat().id
        chats.delete_chat(gone)
        with pytest.raises(ChatNotFoundError):
            await runtime.send_message(gone, "hi")
        with pytest.raises(ValueError):
            await runtime.send_message("../../etc/passwd", "hi")
        assert session_of(chats, chat_id).get_history() == []


class TestCheckpoints:
    async def test_a_long_reply_is_saved_while_it_streams(self, tmp_path, chats, open_runtime):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(
            ScriptedModel(["First part. ", 0.02, "Second part. ", hold, "End."]),
            checkpoint_interval_s=0.01,
        )
        ticket = await runtime.send_message(chat_id, "write a lot")
        await hold.reached()
        saved = session_of(chats, chat_id).get_message(ticket.assistant_message_id)
        assert saved["metadata"]["status"] == "running"
        assert saved["parts"][0]["text"].startswith("First part. Second part.")
        hold.release()
        await runtime.wait_idle(chat_id)
        final = session_of(chats, chat_id).get_message(ticket.assistant_message_id)
        assert final["parts"] == [{"type": "text", "text": "First part. Second part. End."}]
        assert final["metadata"]["status"] == "completed"

    async def test_archiving_is_recorded_on_the_conversation(self, tmp_path, chats, open_runtime):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        archived = await runtime.set_archived(chat_id)
        assert archived.archived_at is not None
        assert (await runtime.set_archived(chat_id, False)).archived_at is None


class TestCancel:
    async def test_cancelling_keeps_the_partial_reply_marked_cancelled(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel(["Half of ", "the answer", hold]))
        ticket = await runtime.send_message(chat_id, "long question")
        await hold.reached()
        assert await runtime.cancel(chat_id)
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        assert events[-1].type == "run.cancelled"
        assert events[-1].data["partial"] is True
        reply = session_of(chats, chat_id).get_message(ticket.assistant_message_id)
        assert reply["parts"] == [{"type": "text", "text": "Half of the answer"}]
        assert reply["metadata"]["status"] == "cancelled"
        assert (await runtime.get_run(chat_id, ticket.run_id)).status == RunStatus.CANCELLED
        assert session_of(chats, chat_id).get_message(ticket.user_message_id) is not None
        hold.release()

    async def test_the_next_queued_message_runs_after_a_cancel(self, tmp_path, chats, open_runtime):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel(["partial", hold], "second reply"))
        first = await runtime.send_message(chat_id, "first")
        await hold.reached()
        second = await runtime.send_message(chat_id, "second")
        await runtime.cancel(chat_id)
        events = await events_until_done(runtime, chat_id, second.run_id)
        terminal = [(e.type, e.run_id) for e in events if e.type in TERMINAL]
        assert terminal == [("run.cancelled", first.run_id), ("run.completed", second.run_id)]
        hold.release()

    async def test_a_queued_run_can_be_cancelled_without_running(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        model = ScriptedModel([hold, "first reply"])
        runtime = open_runtime(model)
        first = await runtime.send_message(chat_id, "first")
        await hold.reached()
        queued = await runtime.send_message(chat_id, "never mind")
        assert await runtime.cancel(chat_id, run_id=queued.run_id)
        hold.release()
        await runtime.wait_idle(chat_id)
        assert (await runtime.get_run(chat_id, first.run_id)).status == RunStatus.COMPLETED
        assert (await runtime.get_run(chat_id, queued.run_id)).status == RunStatus.CANCELLED
        assert len(model.requests) == 1
        # What the user wrote stays; the reply slot says it was cancelled.
        session = session_of(chats, chat_id)
        assert session.get_message(queued.user_message_id) is not None
        reply = session.get_message(queued.assistant_message_id)
        assert reply["metadata"]["status"] == "cancelled"


class TestBranches:
    async def test_regenerate_adds_a_sibling_reply_to_the_same_user_message(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        model = ScriptedModel("first answer", "second answer")
        runtime = open_runtime(model)
        ticket = await runtime.send_message(chat_id, "question")
        await runtime.wait_idle(chat_id)
        again = await runtime.regenerate(chat_id, ticket.assistant_message_id)
        await runtime.wait_idle(chat_id)
        assert again.user_message_id == ticket.user_message_id
        session = session_of(chats, chat_id)
        replies = [m["id"] for m in session.get_branches(ticket.user_message_id)]
        assert replies == [ticket.assistant_message_id, again.assistant_message_id]
        assert texts(session) == [("user", "question"), ("assistant", "second answer")]
        assert [m.content for m in model.requests[1].messages] == ["question"]

    async def test_editing_a_message_adds_a_sibling_user_message_and_answers_it(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        model = ScriptedModel("a1", "a2", "a2 edited")
        runtime = open_runtime(model)
        first = await runtime.send_message(chat_id, "q1")
        await runtime.wait_idle(chat_id)
        second = await runtime.send_message(chat_id, "q2 with a typo")
        await runtime.wait_idle(chat_id)
        edited = await runtime.edit_message(chat_id, second.user_message_id, "q2 fixed")
        await runtime.wait_idle(chat_id)
        session = session_of(chats, chat_id)
        assert texts(session) == [
            ("user", "q1"),
            ("assistant", "a1"),
            ("user", "q2 fixed"),
            ("assistant", "a2 edited"),
        ]
        siblings = [m["id"] for m in session.get_branches(first.assistant_message_id)]
        assert siblings == [second.user_message_id, edited.user_message_id]
        stored = session.get_message(edited.user_message_id)
        assert stored["metadata"]["editedFrom"] == second.user_message_id
        # The old branch is untouched.
        assert session.get_message(second.assistant_message_id)["parts"][0]["text"] == "a2"

    async def test_editing_the_first_message_starts_a_new_root(self, tmp_path, chats, open_runtime):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("a", "b"))
        first = await runtime.send_message(chat_id, "original")
        await runtime.wait_idle(chat_id)
        await runtime.edit_message(chat_id, first.user_message_id, "rewritten")
        await runtime.wait_idle(chat_id)
        assert texts(session_of(chats, chat_id)) == [("user", "rewritten"), ("assistant", "b")]

    @pytest.mark.parametrize("named", [["a1"], {"id": "a1"}, 7, None, "another-chats-message"])
    async def test_regenerating_or_editing_what_is_no_message_id_of_the_chat_is_not_found(
        self, tmp_path, chats, open_runtime, named
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        await runtime.send_message(chat_id, "q")
        await runtime.wait_idle(chat_id)
        with pytest.raises(NotFoundError):
            await runtime.regenerate(chat_id, named)
        with pytest.raises(NotFoundError):
            await runtime.edit_message(chat_id, named, "rewritten")
        assert len(session_of(chats, chat_id).get_history()) == 2

    async def test_regenerating_a_user_message_is_refused(self, tmp_path, chats, open_runtime):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        ticket = await runtime.send_message(chat_id, "q")
        await runtime.wait_idle(chat_id)
        with pytest.raises(KeyError):
            await runtime.regenerate(chat_id, ticket.user_message_id)


class TestDirectoryIntegration:
    async def test_the_first_exchange_titles_the_chat_and_every_reply_updates_the_preview(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        model = ScriptedModel("Lisbon is lovely in May.", "Pack light.", complete_with="Trip")
        runtime = open_runtime(model)
        await runtime.send_message(chat_id, "Plan a trip to Lisbon")
        await runtime.wait_idle(chat_id)
        summary = chats.get_summary(chat_id)
        assert summary.title == "Trip"
        assert summary.last_message_preview == "Lisbon is lovely in May."
        await runtime.send_message(chat_id, "what to pack?")
        await runtime.wait_idle(chat_id)
        summary = chats.get_summary(chat_id)
        assert summary.title == "Trip"  # titled once
        assert summary.last_message_preview == "Pack light."
        assert len(model.prompts) == 1

    async def test_a_chat_renamed_by_the_user_before_the_first_reply_keeps_its_name(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel([hold, "ok"]))
        await runtime.send_message(chat_id, "hello")
        await hold.reached()
        chats.rename_chat(chat_id, "My name")
        hold.release()
        await runtime.wait_idle(chat_id)
        assert chats.get_summary(chat_id).title == "My name"

    async def test_shared_memory_is_frozen_for_a_turn_and_fresh_at_the_next(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        chats.set_shared_context("user_memory", "- likes tea\n")
        model = ScriptedModel(
            [ToolCall("c1", "remember", {"fact": "lives in Porto"})], "Saved.", "Sure."
        )
        runtime = open_runtime(model)
        await runtime.send_message(chat_id, "remember that I live in Porto")
        await runtime.wait_idle(chat_id)
        assert chats.get_shared_context("user_memory") == "- likes tea\n- lives in Porto\n"
        # Both model calls of the remembering turn saw the snapshot taken at its start.
        for request in model.requests[:2]:
            assert [i.text for i in request.section("memory").items] == ["likes tea"]
        await runtime.send_message(chat_id, "what do you know?")
        await runtime.wait_idle(chat_id)
        latest = model.requests[-1].section("memory")
        assert [i.text for i in latest.items] == ["likes tea", "lives in Porto"]
        reply = session_of(chats, chat_id).get_history()[1]
        assert reply["parts"][0] == {
            "type": "tool-remember",
            "toolCallId": "c1",
            "state": "output-available",
            "input": {"fact": "lives in Porto"},
            "output": {"saved": True, "fact": "lives in Porto"},
        }

    async def test_unreachable_shared_memory_does_not_fail_the_turn(
        self, tmp_path, chats, open_runtime, monkeypatch
    ):
        chat_id = chats.create_chat().id
        model = ScriptedModel("Still here.")
        runtime = open_runtime(model)

        def down(label):
            raise ConnectionError("directory unreachable")

        monkeypatch.setattr(chats, "get_shared_context", down)
        ticket = await runtime.send_message(chat_id, "hello?")
        events = await events_until_done(runtime, chat_id, ticket.run_id)
        assert events[-1].type == "run.completed"
        assert model.requests[0].section("memory") is None

    async def test_a_reply_streaming_into_a_chat_deleted_elsewhere_still_finishes(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        runtime = open_runtime(ScriptedModel([hold, "done"]))
        ticket = await runtime.send_message(chat_id, "hello")
        await hold.reached()
        subscribed = asyncio.Event()
        watching = asyncio.ensure_future(
            events_until_done(runtime, chat_id, ticket.run_id, subscribed=subscribed)
        )
        await asyncio.wait_for(subscribed.wait(), WAIT_S)
        handle = chats.get_chat(chat_id)  # a tab that still holds the chat
        chats.delete_chat(chat_id)
        hold.release()
        events = await watching
        assert events[-1].type == "run.completed"
        reply = handle.session.get_message(ticket.assistant_message_id)
        assert reply["metadata"]["status"] == "completed"
        with pytest.raises(ChatNotFoundError):
            await runtime.send_message(chat_id, "again")

    async def test_a_re_created_chat_starts_a_fresh_conversation(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        await runtime.send_message(chat_id, "old life")
        await runtime.wait_idle(chat_id)
        await runtime.put_session_state(chat_id, {"old": True}, expected_version=0)
        chats.delete_chat(chat_id)
        chats.create_chat(chat_id=chat_id)
        ticket = await runtime.send_message(chat_id, "new life")
        await runtime.wait_idle(chat_id)
        assert texts(session_of(chats, chat_id)) == [("user", "new life"), ("assistant", "OK.")]
        assert (await runtime.get_session_state(chat_id)).data == {}
        assert (await runtime.get_conversation(chat_id)).last_run_id == ticket.run_id


class TestRecovery:
    async def test_a_run_left_running_by_a_dead_process_is_failed_and_queued_ones_resume(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        hold = Hold()
        crashed = make_runtime(tmp_path, chats, ScriptedModel([hold]))
        stuck = await crashed.send_message(chat_id, "first")
        await hold.reached()
        waiting = await crashed.send_message(chat_id, "second")
        await die_mid_run(crashed)
        store = runtime_store_for(chats.get_chat(chat_id).sessions.database)
        assert store.load_run(stuck.run_id).status == RunStatus.RUNNING

        revived = open_runtime(ScriptedModel("answer to second"))
        status = await revived.run_status(chat_id)
        await revived.wait_idle(chat_id)
        assert status.running is None or status.running.id == waiting.run_id
        assert (await revived.get_run(chat_id, stuck.run_id)).status == RunStatus.FAILED
        assert (await revived.get_run(chat_id, waiting.run_id)).status == RunStatus.COMPLETED
        session = session_of(chats, chat_id)
        interrupted = session.get_message(stuck.assistant_message_id)
        assert interrupted["metadata"]["status"] == "failed"
        assert session.get_message(stuck.user_message_id) is not None
        hold.release()


class TestOfflineAssistant:
    async def test_it_remembers_and_recalls_across_chats(self, tmp_path, chats, open_runtime):
        model = OfflineAssistant(chunk_delay_s=0)
        runtime = open_runtime(model)
        trip = chats.create_chat(title="Trip planning").id
        await runtime.send_message(trip, "We fly to Lisbon on May 3rd")
        await runtime.wait_idle(trip)
        notes = chats.create_chat().id
        await runtime.send_message(notes, "remember that my sister is called Ana")
        await runtime.wait_idle(notes)
        assert "- my sister is called Ana\n" in chats.get_shared_context("user_memory")
        confirmation = texts(session_of(chats, notes))[-1][1]
        assert "I'll remember that my sister is called Ana" in confirmation

        ask = chats.create_chat().id
        ticket = await runtime.send_message(ask, "What did I say about Lisbon?")
        events = await events_until_done(runtime, ask, ticket.run_id)
        answer = events[-1].data["text"]
        assert "In “Trip planning”: “We fly to Lisbon on May 3rd”" in answer
        assert "What did I say" not in answer  # the question itself is not a source
        who = await runtime.send_message(ask, "what did I tell you about my sister?")
        await runtime.wait_idle(ask)
        assert "my sister is called Ana" in texts(session_of(chats, ask))[-1][1]
        assert who.run_id

    async def test_offline_titles_are_heuristic_and_need_no_model(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(OfflineAssistant(chunk_delay_s=0))
        await runtime.send_message(chat_id, "Can you help me plan a birthday party?")
        await runtime.wait_idle(chat_id)
        assert chats.get_summary(chat_id).title == "Plan a birthday party"
