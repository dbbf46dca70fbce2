"""The end of a deleted chat's undo window ends it for its members too (docs/sharing.md,
"Membership"): the purge announces ``purged``, the app's services call ``chat_ended``, so
the members' tabs and "Shared with me" hear it from the sharing feed, its links are deleted,
and a run in an id made again later sees no member of the old chat."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from backend.chats import ChatPurged
from backend.cli import cli
from backend.config import Settings
from backend.sharing import ChatRef, SnapshotMessage
from chatsapp import services as services_module
from chatsapp.services import Release, Services
from tests.accounts.conftest import FakeClock
from tests.support.signed_in import sign_in

WINDOW_S = 60


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> Services:
    env = {
        "CHATS_DATA_DIR": str(tmp_path / "data"),
        "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
        "CHATS_SOFT_DELETE_WINDOW_S": str(WINDOW_S),
    }
    made = Services(Settings.from_env(env), clock=clock)
    monkeypatch.setattr(services_module, "_services", made)
    return made


def shared_chat(made: Services) -> tuple[ChatRef, str]:
    """Olivia's chat, shared with pat, with a link; (the chat, pat's id)."""
    owner_id, _ = sign_in(made, "olivia")
    pat_id, _ = sign_in(made, "pat")
    owner = made.accounts().user(owner_id)
    assert owner is not None
    chat = ChatRef(owner_id=owner_id, chat_id=made.directory(owner_id).create_chat("Trip").id)
    sharing = made.sharing()
    sharing.share(owner, chat, "pat", "participant")
    message = SnapshotMessage(author="olivia", role="user", text="hi", created_at=1)
    sharing.create_link(owner, chat, "Trip", [message])
    return chat, pat_id


def delete_as_the_app_does(made: Services, chat: ChatRef) -> None:
    owner = made.accounts().user(chat.owner_id)
    assert owner is not None
    made.directory(chat.owner_id).delete_chat(chat.chat_id)
    made.sharing().chat_deleted(owner, chat)


class TestThePurgeEndsASharedChat:
    def test_after_the_window_members_hear_chat_ended_and_links_and_members_are_gone(
        self, app_services: Services, clock: FakeClock
    ):
        chat, pat_id = shared_chat(app_services)
        sharing = app_services.sharing()
        owner = app_services.accounts().user(chat.owner_id)
        assert owner is not None
        delete_as_the_app_does(app_services, chat)
        cursor = sharing.change_cursor()

        clock.advance_s(WINDOW_S - 1)
        assert app_services.directory(chat.owner_id).sweep() == []  # still undoable
        assert sharing.changes_since(cursor).changes == ()

        clock.advance_s(2)
        assert app_services.directory(chat.owner_id).sweep() == [chat.chat_id]
        ended = sharing.changes_since(cursor).changes
        assert [(c.user_id, c.chat_id, c.kind) for c in ended] == [
            (pat_id, chat.chat_id, "chat_ended")
        ]
        assert ended[0].lost  # the member's tabs drop it
        assert sharing.list_links(owner) == []
        assert sharing.participant_ids(chat) == (chat.owner_id,)  # what a run would see

    def test_the_purge_is_announced_once_and_a_chat_shared_with_nobody_ends_quietly(
        self, app_services: Services, clock: FakeClock
    ):
        owner_id, _ = sign_in(app_services, "olivia")
        chats = app_services.directory(owner_id)
        heard: list[object] = []
        chats.subscribe(heard.append)
        alone = chats.create_chat("Alone").id
        chats.delete_chat(alone)
        cursor = app_services.sharing().change_cursor()
        clock.advance_s(WINDOW_S + 1)
        chats.sweep()
        chats.sweep()
        assert [e for e in heard if isinstance(e, ChatPurged)] == [ChatPurged(owner_id, alone)]
        assert app_services.sharing().changes_since(cursor).changes == ()


class TestTheSweepOnOpeningEndsSharesToo:
    """A directory released while the window ran out purges on its next opening: in the app,
    and in any ``chats`` command (each opens the directories it names)."""

    def test_the_app_reopening_a_released_directory_ends_the_share(
        self, app_services: Services, clock: FakeClock
    ):
        chat, pat_id = shared_chat(app_services)
        owner = app_services.accounts().user(chat.owner_id)
        assert owner is not None
        delete_as_the_app_does(app_services, chat)
        sharing = app_services.sharing()
        cursor = sharing.change_cursor()
        released = asyncio.run(app_services.release_idle(chat.owner_id, 0.0))
        assert released is Release.RELEASED

        clock.advance_s(WINDOW_S + 1)
        app_services.directory(chat.owner_id)  # the opening sweep purges it

        ended = sharing.changes_since(cursor).changes
        assert [(c.user_id, c.chat_id, c.kind) for c in ended] == [
            (pat_id, chat.chat_id, "chat_ended")
        ]
        assert sharing.list_links(owner) == []

    def test_a_chats_command_that_purges_ends_the_share(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ):
        env = {
            "CHATS_DATA_DIR": str(tmp_path / "data"),
            "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
            "CHATS_SOFT_DELETE_WINDOW_S": str(WINDOW_S),
            "CHATS_EMBEDDER": "off",
        }
        ten_minutes_ago = FakeClock(int(time.time() * 1000) - 600_000)  # deleted then
        made = Services(Settings.from_env(env), clock=ten_minutes_ago)
        monkeypatch.setattr(services_module, "_services", made)
        chat, pat_id = shared_chat(made)
        delete_as_the_app_does(made, chat)
        cursor = made.sharing().change_cursor()
        asyncio.run(made.aclose())

        listed = CliRunner(env=env).invoke(cli, ["list", "--user", "olivia"], prog_name="chats")
        assert listed.exit_code == 0, listed.output
        assert chat.chat_id not in listed.output

        again = Services(Settings.from_env(env))
        try:
            ended = again.sharing().changes_since(cursor).changes
            assert [(c.user_id, c.chat_id, c.kind) for c in ended] == [
                (pat_id, chat.chat_id, "chat_ended")
            ]
            assert again.sharing().participant_ids(chat) == (chat.owner_id,)
        finally:
            asyncio.run(again.aclose())
