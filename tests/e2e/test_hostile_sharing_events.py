"""Hostile clients below the browser aim raw events at a shared chat (issue 28, item 5).

The owner ("shown") shares a chat with a viewer ("shviewer") and a participant ("shpart");
a stranger ("shstranger") has no part in it. Over raw sockets: the viewer's every act but
reading is refused and changes nothing; the stranger reaches nothing of the chat by its id
through any chat event; a removed participant's socket receives nothing more of the chat,
not even when it hydrates again; and nobody but the owner can share, remove or switch the
owner's context on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from backend.chats import Chats
from chatsapp.states.chat_people import ChatPeopleTabState, SharedChatPeopleState
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState
from chatsapp.states.models import ChatSettingsTabState
from chatsapp.states.session_state import SessionStateTabState
from chatsapp.states.share_dialog import ShareDialogTabState
from chatsapp.states.shared_with_me import SharedWithMeState
from tests.support.app_server import AppServer
from tests.support.deadlines import until_blocking
from tests.support.raw_client import HYDRATE, RawTab

OWNER, VIEWER, PARTICIPANT, STRANGER = "shown", "shviewer", "shpart", "shstranger"
TITLE = "Pangolin treaty draft"
SECRET = "the vault code is 7731-pangolin"
LATER_SECRET = "written after the removal: 9924-ibex"


@dataclass(frozen=True)
class Shared:
    owner_id: str
    chat_id: str

    @property
    def path(self) -> str:
        return f"/chat/{self.chat_id}"


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


def tab_of(server: AppServer, username: str, path: str) -> RawTab:
    """A raw tab of ``username`` that opened ``path`` as the page does."""
    tab = RawTab(server.backend_url, session_token=server.session_token(username)).connect()
    tab.send(HYDRATE, path=path)
    for state in (SharedDirectoryState, SharedWithMeState):
        tab.send(event(state, "link"), path=path)
    for state, handler in ((ChatTabState, "open_chat"), (ChatSettingsTabState, "load")):
        tab.send(event(state, handler), path=path)
    tab.send(event(ChatPeopleTabState, "load"), path=path)
    tab.settle()
    return tab


def share(owner: RawTab, shared: Shared, username: str, role: str) -> None:
    owner.send(
        event(ShareDialogTabState, "share"),
        {"form_data": {"username": username, "role": role}},
        shared.path,
    )
    owner.settle()


def messages(server: AppServer, shared: Shared) -> list[str]:
    with Chats(server.data_dir, shared.owner_id) as chats:
        history = chats.get_chat(shared.chat_id).session.get_history()
        return [m["id"] for m in history]


def title(server: AppServer, shared: Shared) -> str:
    with Chats(server.data_dir, shared.owner_id) as chats:
        return chats.get_summary(shared.chat_id).title


@pytest.fixture(scope="module")
def shared(app_server: AppServer) -> Iterator[tuple[Shared, RawTab]]:
    """The owner's chat with one stored message, shared with the viewer; the owner's tab."""
    for name in (OWNER, VIEWER, PARTICIPANT, STRANGER):
        app_server.session_token(name)
    owner_id = app_server.user_id(OWNER)
    with Chats(app_server.data_dir, owner_id) as chats:
        chat_id = chats.create_chat(TITLE).id
        chats.get_chat(chat_id).session.append_message(
            {"id": "pangolin-m1", "role": "user", "parts": [{"type": "text", "text": SECRET}]}
        )
    found = Shared(owner_id, chat_id)
    owner = tab_of(app_server, OWNER, found.path)
    share(owner, found, VIEWER, "viewer")
    yield found, owner
    owner.close()


@pytest.fixture(autouse=True)
def no_handler_fails(app_server: AppServer) -> Iterator[None]:
    start = app_server.log_path.stat().st_size
    yield
    with app_server.log_path.open("rb") as log:
        log.seek(start)
        written = log.read().decode(errors="replace")
    assert "Reflex Backend Exception" not in written, written[-3000:]


class TestAViewer:
    def test_reads_the_chat_and_its_people(self, app_server: AppServer, shared):
        found, _owner = shared
        viewer = tab_of(app_server, VIEWER, found.path)
        try:
            received = viewer.text()
            assert "7731-pangolin" in received and TITLE in received
            assert OWNER in received  # the member list names the owner
        finally:
            viewer.close()

    def test_every_act_but_reading_is_refused_and_changes_nothing(
        self, app_server: AppServer, shared
    ):
        found, _owner = shared
        before = (messages(app_server, found), title(app_server, found))
        viewer = tab_of(app_server, VIEWER, found.path)
        try:
            for name, payload in (
                (event(ChatTabState, "send"), {"text": "a viewer writes"}),
                (event(ChatTabState, "regenerate"), {"assistant_message_id": "pangolin-m1"}),
                (event(ChatTabState, "start_edit"), {"message_id": "pangolin-m1", "text": "x"}),
                (event(ChatTabState, "submit_edit"), {"text": "rewritten by a viewer"}),
                (event(ChatTabState, "fork_from"), {"message_id": "pangolin-m1"}),
                (event(SidebarTabState, "start_rename"), {"chat_id": found.chat_id, "title": ""}),
                (event(SidebarTabState, "commit_rename"), {"title": "Renamed by a viewer"}),
                (event(SidebarTabState, "delete_chat"), {"chat_id": found.chat_id, "title": ""}),
                (event(SidebarTabState, "archive_chat"), {"chat_id": found.chat_id}),
                (event(ChatSettingsTabState, "choose_model"), {"key": "auto"}),
                (event(SessionStateTabState, "save"), {"draft": '{"taken": true}'}),
                (
                    event(ShareDialogTabState, "share"),
                    {"form_data": {"username": STRANGER, "role": "viewer"}},
                ),
                (event(ShareDialogTabState, "set_owner_context"), {"enabled": True}),
                (event(ShareDialogTabState, "create_link"), {"form_data": {}}),
            ):
                viewer.send(name, payload, found.path)
            viewer.settle()
            assert (messages(app_server, found), title(app_server, found)) == before
            with Chats(app_server.data_dir, app_server.user_id(VIEWER)) as own:
                assert own.list_chats(limit=10) == []  # no fork landed in the viewer's chats
            received = str(viewer.received)
            assert "a viewer writes" not in received and "rewritten" not in received
        finally:
            viewer.close()

    def test_typing_from_a_viewer_tells_nobody(self, app_server: AppServer, shared):
        found, owner = shared
        viewer = tab_of(app_server, VIEWER, found.path)
        try:
            owner.settle()
            viewer.send(event(ChatPeopleTabState, "typing"), path=found.path)
            viewer.settle()
            owner.flush()
            people = SharedChatPeopleState.get_full_name()
            typing = [
                value
                for update in owner.received
                for key, value in ((update.get("delta") or {}).get(people) or {}).items()
                if key.startswith("typing")
            ]
            assert all(VIEWER not in names for names in typing), typing
        finally:
            viewer.close()


class TestAStranger:
    def test_reaches_nothing_of_the_chat_by_its_id(self, app_server: AppServer, shared):
        found, _owner = shared
        stranger = tab_of(app_server, STRANGER, found.path)
        try:
            for name, payload in (
                (event(ChatTabState, "send"), {"text": "a stranger writes"}),
                (event(ChatTabState, "load_earlier"), {}),
                (event(ChatPeopleTabState, "typing"), {}),
                (event(ShareDialogTabState, "set_open"), {"value": True}),
                (event(ShareDialogTabState, "leave"), {}),
                (
                    event(ShareDialogTabState, "share"),
                    {"form_data": {"username": STRANGER, "role": "participant"}},
                ),
            ):
                stranger.send(name, payload, found.path)
            stranger.settle()
            received = stranger.text()
            for secret in ("7731-pangolin", "Pangolin", OWNER):
                assert secret not in received, secret
            assert len(messages(app_server, found)) == 1
        finally:
            stranger.close()


class TestARemovedMember:
    def test_receives_nothing_more_of_the_chat_not_even_on_hydrate(
        self, app_server: AppServer, shared
    ):
        found, owner = shared
        share(owner, found, PARTICIPANT, "participant")
        member = tab_of(app_server, PARTICIPANT, found.path)
        try:
            assert "7731-pangolin" in member.text()
            owner.send(event(ShareDialogTabState, "set_open"), {"value": True}, found.path)
            owner.settle()
            member_id = app_server.user_id(PARTICIPANT)
            owner.send(
                event(ShareDialogTabState, "remove_member"), {"member_id": member_id}, found.path
            )
            owner.settle()
            lost = ChatTabState.get_full_name()
            member.wait_for(lambda u: "removed you" in str((u.get("delta") or {}).get(lost)))
            member.settle()
            seen = len(member.received)

            owner.send(event(ChatTabState, "send"), {"text": LATER_SECRET}, found.path)
            until_stored(app_server, found, 3)
            member.send(HYDRATE, path=found.path)
            member.send(event(ChatTabState, "send"), {"text": "still here?"}, found.path)
            member.send(event(ChatTabState, "open_chat"), path=found.path)
            member.settle()
            after = str(member.received[seen:])
            for secret in ("9924-ibex", "7731-pangolin", "Pangolin"):
                assert secret not in after, secret
            assert "still here?" not in str(messages(app_server, found))
        finally:
            member.close()


def until_stored(server: AppServer, shared: Shared, count: int) -> None:
    """Wait until the chat holds ``count`` messages (the owner's send and its reply)."""
    until_blocking(
        lambda: len(messages(server, shared)) >= count, what="the owner's message stored"
    )
