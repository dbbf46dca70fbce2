"""Opening a chat that was never written creates no file (SPEC: created on first write).

A chat page reads the transcript window, the header's binding and model, the session state and
the run status, and watches the chat's runs. All of those are reads: each answers as for an
empty chat, from defaults, and the chat's database file appears only with its first write.
"""

from __future__ import annotations

import pytest

from backend.chats import Chats
from backend.transcript import load_window
from tests.runtime.helpers import events_until_done
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio


def file_of(chats: Chats, chat_id: str):
    chat = chats.get_chat(chat_id)
    return chats.layout.chat_path(chat.id, chat.generation)


class TestOpeningAnUnwrittenChat:
    async def test_what_a_chat_page_reads_on_open_creates_no_file(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("unused"))
        window = load_window(chats.get_chat(chat_id).reader)
        binding = await runtime.agent_binding(chat_id)
        record = await runtime.get_conversation(chat_id)
        state = await runtime.get_session_state(chat_id)
        status = await runtime.run_status(chat_id)
        summary = await runtime.get_thread_summary(chat_id)
        meter = await runtime.context_meter(chat_id)
        assert not chats.get_chat(chat_id).has_file
        assert not file_of(chats, chat_id).exists()
        assert (
            not file_of(chats, chat_id)
            .with_name(file_of(chats, chat_id).name + "-journal")
            .exists()
        )
        assert 0 < meter.next_turn_tokens < meter.context_tokens
        assert (window.entries, window.has_earlier) == ((), False)
        assert binding.agent_id == record.agent_id
        assert (record.id, record.archived_at, record.model) == (chat_id, None, None)
        assert (state.version, state.data) == (0, {})
        assert not status.busy
        assert summary is None

    async def test_the_defaults_read_before_the_first_write_are_the_ones_stored_by_it(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("unused"))
        before = await runtime.get_conversation(chat_id)
        stored = await runtime.set_model(chat_id, None)  # a write to the record
        assert chats.get_chat(chat_id).has_file  # a file, or the scope's rows
        assert (stored.agent_id, stored.agent_version_policy, stored.agent_version) == (
            before.agent_id,
            before.agent_version_policy,
            before.agent_version,
        )

    async def test_the_first_message_creates_the_file_and_reads_then_see_it(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("Hello."))
        assert load_window(chats.get_chat(chat_id).reader).entries == ()
        ticket = await runtime.send_message(chat_id, "hi")
        await events_until_done(runtime, chat_id, ticket.run_id)
        window = load_window(chats.get_chat(chat_id).reader)
        assert [e.text for e in window.entries] == ["hi", "Hello."]

    async def test_choosing_a_model_is_a_write_and_creates_the_file(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel("unused"))
        await runtime.set_model(chat_id, None)
        assert chats.get_chat(chat_id).has_file
        assert (await runtime.get_conversation(chat_id)).model is None
