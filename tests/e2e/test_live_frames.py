"""What live updates cost on the wire, seen by a raw socket client (tests/support/raw_client.py).

Two tabs of one person: what reaches the *other* tab is a fan-out of a shared state, and it
must carry only what changed — no router data, one row for a rename.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from backend.chats import Chats
from chatsapp.pages import ON_LOAD_COMMON
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState, SidebarTabState
from chatsapp.states.shared_conversation import SharedConversationState
from tests.support.app_server import AppServer
from tests.support.raw_client import HYDRATE, RawTab
from tests.support.streamed_text import StreamedText

ROOT_STATE = "reflex___state____state"


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


def shared(update: dict[str, Any], state: type) -> dict[str, Any]:
    return (update.get("delta") or {}).get(state.get_full_name(), {})


def var(values: dict[str, Any], name: str) -> Any:
    return values.get(f"{name}_rx_state_")


@pytest.fixture
def chat(app_server: AppServer) -> tuple[str, str]:
    """(user id, chat id) of a chat of "frank", written through the backend."""
    app_server.session_token("frank")
    accounts = app_server.accounts()
    try:
        user = accounts.user_by_username("frank")
        assert user is not None
        user_id = user.id
    finally:
        accounts.close()
    with Chats(app_server.data_dir, user_id) as chats:
        return user_id, chats.create_chat("Frames").id


def tab_on(server: AppServer, chat_id: str) -> RawTab:
    path = f"/chat/{chat_id}"
    tab = RawTab(server.backend_url, session_token=server.session_token("frank")).connect()
    tab.send(HYDRATE, path=path)
    tab.send(event(SharedDirectoryState, "link"), path=path)
    tab.send(event(ChatTabState, "open_chat"), path=path)
    tab.settle()
    return tab


@pytest.fixture
def two_tabs(app_server: AppServer, chat: tuple[str, str]) -> Iterator[tuple[RawTab, RawTab]]:
    tabs = (tab_on(app_server, chat[1]), tab_on(app_server, chat[1]))
    yield tabs
    for tab in tabs:
        tab.close()


class TestFannedOutFramesCarryOnlyWhatChanged:
    def test_a_streamed_frame_reaching_another_tab_carries_no_router_data(
        self, chat: tuple[str, str], two_tabs: tuple[RawTab, RawTab]
    ):
        sender, watcher = two_tabs
        sender.send(event(ChatTabState, "send"), {"text": "Tell me about it"}, f"/chat/{chat[1]}")
        streamed: list[dict[str, Any]] = []
        text = StreamedText()

        def ended(update: dict[str, Any]) -> bool:
            values = shared(update, SharedConversationState)
            if text.apply(values):
                streamed.append(update)
            return bool(streamed) and var(values, "streaming") is False

        watcher.wait_for(ended)
        assert streamed
        for update in streamed:
            root = (update.get("delta") or {}).get(ROOT_STATE, {})
            assert not [name for name in root if name.startswith("rx_router")], root

    def test_a_rename_in_one_tab_reaches_the_other_as_one_row(
        self, chat: tuple[str, str], two_tabs: tuple[RawTab, RawTab]
    ):
        renamer, watcher = two_tabs
        path = f"/chat/{chat[1]}"
        renamer.send(
            event(SidebarTabState, "start_rename"), {"chat_id": chat[1], "title": ""}, path
        )
        renamer.send(event(SidebarTabState, "set_edit_title"), {"value": "Trip to Lisbon"}, path)
        renamer.send(event(SidebarTabState, "commit_rename"), {}, path)

        def renamed(update: dict[str, Any]) -> bool:
            return "Trip to Lisbon" in str(shared(update, SharedDirectoryState))

        values = shared(watcher.wait_for(renamed), SharedDirectoryState)
        # One row; the order (``positions``, small ints) may come along: a rename bumps the chat.
        rows = {name: row for name, row in values.items() if name.startswith("slot_")}
        assert len(rows) == 1, values
        (row,) = rows.values()
        assert (row["id"], row["title"]) == (chat[1], "Trip to Lisbon")
        assert set(values) - set(rows) <= {"positions_rx_state_", "count_rx_state_"}


class TestOpeningATab:
    def test_a_tab_opening_sends_the_persons_other_tabs_nothing(
        self, app_server: AppServer, chat: tuple[str, str]
    ):
        """A page links every list the person's tabs share (sidebar, archive, memory, shared
        with me, projects): the tabs already open hold them, so another tab's link sends them
        nothing (else n tabs of a person cost n²/2 copies of each list).

        The fixture made the chat from another process, so the app may re-read the person's
        lists once or twice while the tabs open (it sees that commit, or reopens the
        directory it had released): a copy per opening tab is what a link would cost."""
        path = f"/chat/{chat[1]}"

        def open_page() -> RawTab:
            tab = RawTab(app_server.backend_url, session_token=app_server.session_token("frank"))
            tab.connect().send(HYDRATE, path=path)
            for handler in ON_LOAD_COMMON:
                tab.send(f"{handler.state_full_name}.{handler.fn.__name__}", path=path)
            tab.settle()
            return tab

        first = open_page()
        seen = len(first.received)
        later = [open_page() for _ in range(4)]
        try:
            first.flush()
            shared_lists = {handler.state_full_name for handler in ON_LOAD_COMMON}
            sent = Counter(
                name
                for update in first.received[seen:]
                for name in (update.get("delta") or {})
                if name in shared_lists
            )
            assert all(copies < len(later) for copies in sent.values()), sent
        finally:
            for tab in [first, *later]:
                tab.close()
