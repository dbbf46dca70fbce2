"""The runtime's side of archive and "New chat with ▾": the directory keeps the archive flag
(one writer, one place), and a chat can start bound to the agent the user picked."""

from __future__ import annotations

import dataclasses

import pytest

from backend.errors import AgentNotFoundError
from backend.runtime import DEFAULT_AGENT, AgentRegistry, start_chat
from backend.runtime.pg_store import runtime_store_for
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

WRITER = dataclasses.replace(DEFAULT_AGENT, id="writer", version=1, system_prompt="Write.")


class TestArchiveThroughTheRuntime:
    async def test_archiving_writes_the_directory_and_the_record_reads_it_back(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        archived = await runtime.set_archived(chat_id)
        assert archived.archived_at == chats.get_summary(chat_id).archived_at is not None
        assert chats.list_chats() == [] and chats.list_chats(archived=True)[0].id == chat_id
        assert (await runtime.get_conversation(chat_id)).archived_at == archived.archived_at

    async def test_the_conversation_table_is_not_a_second_copy_of_the_flag(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        await runtime.bind_agent(chat_id, DEFAULT_AGENT.id)  # a write: the record is stored
        await runtime.set_archived(chat_id)
        assert (await runtime.get_conversation(chat_id)).archived_at is not None
        stored = runtime_store_for(chats.get_chat(chat_id).database).load_conversation(chat_id)
        assert stored is not None and stored.archived_at is None

    async def test_a_chat_archived_in_the_directory_reads_archived_in_the_runtime(
        self, tmp_path, chats, open_runtime
    ):
        chat_id = chats.create_chat().id
        runtime = open_runtime(ScriptedModel())
        chats.archive_chat(chat_id)
        assert (await runtime.get_conversation(chat_id)).archived_at is not None
        chats.unarchive_chat(chat_id)
        assert (await runtime.get_conversation(chat_id)).archived_at is None


class TestStartChatWithAnAgent:
    async def test_a_new_chat_is_bound_to_the_agent_picked(self, tmp_path, chats, open_runtime):
        runtime = open_runtime(ScriptedModel(), agents=AgentRegistry(WRITER))
        record = await start_chat(runtime, "writer")
        assert (record.agent_id, record.agent_version_policy, record.agent_version) == (
            "writer",
            "pinned",
            1,
        )
        assert [s.id for s in chats.list_chats()] == [record.id]

    async def test_without_a_pick_the_chat_starts_with_the_default_agent(
        self, tmp_path, chats, open_runtime
    ):
        runtime = open_runtime(ScriptedModel(), agents=AgentRegistry(WRITER))
        record = await start_chat(runtime, title="Plain")
        assert record.agent_id == DEFAULT_AGENT.id
        assert chats.get_summary(record.id).title == "Plain"

    async def test_an_unknown_agent_makes_no_chat(self, tmp_path, chats, open_runtime):
        runtime = open_runtime(ScriptedModel())
        with pytest.raises(AgentNotFoundError):
            await start_chat(runtime, "nobody")
        assert chats.list_chats() == []

    @pytest.mark.parametrize("picked", [["writer"], {"id": "writer"}, 7])
    async def test_a_pick_that_is_not_an_agent_id_makes_no_chat(
        self, tmp_path, chats, open_runtime, picked
    ):
        runtime = open_runtime(ScriptedModel(), agents=AgentRegistry(WRITER))
        with pytest.raises(AgentNotFoundError):
            await start_chat(runtime, picked)
        assert chats.list_chats() == []

    async def test_a_chat_whose_binding_fails_is_deleted_again(
        self, tmp_path, chats, open_runtime, monkeypatch
    ):
        runtime = open_runtime(ScriptedModel(), agents=AgentRegistry(WRITER))

        async def broken(*args, **kwargs):
            raise OSError("disk full")

        monkeypatch.setattr(runtime, "bind_agent", broken)
        with pytest.raises(OSError):
            await start_chat(runtime, "writer")
        assert chats.list_chats() == []
