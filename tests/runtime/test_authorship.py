"""Who wrote each message of a chat, and who asked for each reply (issue 28, shared chats).

Every user message the runtime stores names its author (``metadata.author``: the owner, or
the member of a shared chat who sent it); every reply names who asked for it
(``metadata.requestedBy``, also on the run record) while the reply itself stays the model's.
The transcript hands both to the UI. The conversation record's ``participant_ids`` follow
the sharing membership. Both storage engines.
"""

from __future__ import annotations

import pytest

from backend.config import PostgresLocation, StorageChoice
from backend.messages import Author, Message
from backend.transcript import load_window
from tests.runtime.helpers import events_until_done
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

PAT = Author(id="pat-7k2m9q", name="pat")


@pytest.fixture(autouse=True)
def engine(storage: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> StorageChoice:
    """``CHATS_STORAGE`` for the directory the test opens (the runtime's ``chats``)."""
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", value)
    return storage


async def answered(runtime, chat_id, ticket) -> None:
    await events_until_done(runtime, chat_id, ticket.run_id)


def stored(chats, chat_id, message_id) -> Message:
    message = chats.get_chat(chat_id).session.get_message(message_id)
    assert message is not None
    return Message.from_stored(message)


class TestSend:
    async def test_the_owners_message_names_the_owner_and_so_does_its_reply(
        self, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("Hi."), owner_name="olivia")
        ticket = await runtime.send_message(chat_id, "hello")
        await answered(runtime, chat_id, ticket)
        owner = Author(id="user1", name="olivia")  # the directory's person
        assert stored(chats, chat_id, ticket.user_message_id).author == owner
        reply = stored(chats, chat_id, ticket.assistant_message_id)
        assert reply.status == "completed"
        assert reply.requested_by == owner
        assert reply.author is None  # the reply is the model's

    async def test_a_members_message_names_the_member_and_the_reply_says_who_asked(
        self, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("Sure."), owner_name="olivia")
        ticket = await runtime.send_message(chat_id, "can you help?", author=PAT)
        await answered(runtime, chat_id, ticket)
        assert stored(chats, chat_id, ticket.user_message_id).author == PAT
        assert stored(chats, chat_id, ticket.assistant_message_id).requested_by == PAT
        run = await runtime.get_run(chat_id, ticket.run_id)
        assert run.requested_by == PAT

    async def test_a_queued_reply_already_names_who_asked(self, chats, open_runtime):
        """The placeholder a tab shows while the reply waits says whose request it answers."""
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("x"))
        ticket = await runtime.send_message(chat_id, "first", author=PAT)
        # read before any turn could have been claimed or not: the name is there either way
        assert stored(chats, chat_id, ticket.assistant_message_id).requested_by == PAT
        await answered(runtime, chat_id, ticket)


class TestRetryAndEdit:
    async def test_a_members_retry_keeps_the_question_s_author_and_names_the_member_on_the_reply(
        self, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel(["One.", "Two."]), owner_name="olivia")
        first = await runtime.send_message(chat_id, "a question")
        await answered(runtime, chat_id, first)
        retry = await runtime.regenerate(chat_id, first.assistant_message_id, author=PAT)
        await answered(runtime, chat_id, retry)
        assert retry.user_message_id == first.user_message_id
        question = stored(chats, chat_id, first.user_message_id)
        assert question.author == Author(id="user1", name="olivia")
        assert stored(chats, chat_id, retry.assistant_message_id).requested_by == PAT
        assert stored(chats, chat_id, first.assistant_message_id).requested_by == question.author

    async def test_an_edited_copy_is_the_editors(self, chats, open_runtime):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel(["One.", "Two."]), owner_name="olivia")
        first = await runtime.send_message(chat_id, "tyop", author=PAT)
        await answered(runtime, chat_id, first)
        editor = Author(id="user1", name="olivia")
        edit = await runtime.edit_message(chat_id, first.user_message_id, "typo", author=editor)
        await answered(runtime, chat_id, edit)
        copy = stored(chats, chat_id, edit.user_message_id)
        assert copy.author == editor
        assert copy.metadata["editedFrom"] == first.user_message_id
        assert stored(chats, chat_id, first.user_message_id).author == PAT


class TestTranscript:
    async def test_entries_carry_the_authors_id_and_name_and_the_requester_of_each_reply(
        self, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel(["One.", "Two."]), owner_name="olivia")
        first = await runtime.send_message(chat_id, "from the owner")
        await answered(runtime, chat_id, first)
        second = await runtime.send_message(chat_id, "from pat", author=PAT)
        await answered(runtime, chat_id, second)
        window = load_window(chats.get_chat(chat_id).session)
        people = [
            (e.role, e.author_id, e.author_name, e.requested_by_id, e.requested_by_name)
            for e in window.entries
        ]
        assert people == [
            ("user", "user1", "olivia", "", ""),
            ("assistant", "", "", "user1", "olivia"),
            ("user", PAT.id, "pat", "", ""),
            ("assistant", "", "", PAT.id, "pat"),
        ]

    def test_a_message_without_an_author_shows_none_and_a_malformed_one_is_ignored(self):
        from backend.transcript import entry_from_message

        plain = entry_from_message({"id": "m", "role": "user", "parts": []})
        assert (plain.author_id, plain.author_name) == ("", "")
        for bad in ("pat", {"name": "pat"}, {"id": 7, "name": "pat"}, {"id": ""}):
            entry = entry_from_message(
                {"id": "m", "role": "user", "parts": [], "metadata": {"author": bad}}
            )
            assert (entry.author_id, entry.author_name) == ("", "")
        nameless = entry_from_message(
            {"id": "m", "role": "user", "parts": [], "metadata": {"author": {"id": "pat-1"}}}
        )
        assert (nameless.author_id, nameless.author_name) == ("pat-1", "pat-1")


class TestParticipants:
    async def test_the_record_lists_the_sharing_membership_owner_first_read_at_every_call(
        self, chats, open_runtime
    ):
        members: dict[str, list[str]] = {}
        runtime = open_runtime(
            ScriptedModel("ok"), participants=lambda chat_id: members.get(chat_id, ["user1"])
        )
        chat_id = chats.create_chat().id
        ticket = await runtime.send_message(chat_id, "hi")
        await answered(runtime, chat_id, ticket)
        assert (await runtime.get_conversation(chat_id)).participant_ids == ("user1",)
        members[chat_id] = ["user1", "pat-7k2m9q", "vic-2b3c4d"]
        record = await runtime.get_conversation(chat_id)
        assert record.owner_principal_id == "user1"
        assert record.participant_ids == ("user1", "pat-7k2m9q", "vic-2b3c4d")
        members[chat_id] = ["user1", "vic-2b3c4d"]  # pat removed
        assert (await runtime.get_conversation(chat_id)).participant_ids == (
            "user1",
            "vic-2b3c4d",
        )

    async def test_without_sharing_the_owner_is_the_only_participant(self, chats, open_runtime):
        runtime = open_runtime(ScriptedModel("ok"))
        chat_id = chats.create_chat().id
        record = await runtime.get_conversation(chat_id)  # never written: the default
        assert record.participant_ids == ("user1",) == (record.owner_principal_id,)
