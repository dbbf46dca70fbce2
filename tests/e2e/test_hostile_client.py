"""A hostile client below the browser: signed in as bob, it crafts Reflex events aimed at alice.

Every attempt is refused, alice's data is unchanged, and nothing bob receives names alice's
chat, title or message (the checks search everything the socket delivered).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from backend.chats import Chats
from chatsapp.auth.guard import OwnerTabState
from chatsapp.states.account import AccountTabState
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_S
from tests.support.raw_client import HYDRATE, RawTab

SECRET_TITLE = "Zanzibar expansion plan"
SECRET_TEXT = "the vault code is 7391-quokka"
SECRETS = ("Zanzibar", "7391-quokka")


@dataclass
class Alice:
    user_id: str
    chat_id: str
    message_count: int


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


def history_of(server: AppServer, alice: Alice) -> list[dict]:
    with Chats(server.data_dir, alice.user_id) as chats:
        return chats.get_chat(alice.chat_id).session.get_history()


@pytest.fixture(scope="module")
def alice(app_server: AppServer) -> Alice:
    app_server.session_token("alice")
    accounts = app_server.accounts()
    try:
        user = accounts.user_by_username("alice")
        assert user is not None
        user_id = user.id
    finally:
        accounts.close()
    with Chats(app_server.data_dir, user_id) as chats:
        chat = chats.create_chat(SECRET_TITLE)
        chat_id = chat.id
        chats.get_chat(chat_id).session.append_message(
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": SECRET_TEXT}]}
        )
    return Alice(user_id, chat_id, 1)


@pytest.fixture
def bob(app_server: AppServer) -> Iterator[RawTab]:
    tab = RawTab(app_server.backend_url, session_token=app_server.session_token("bob")).connect()
    tab.send(HYDRATE)
    tab.send(event(SharedDirectoryState, "link"))
    tab.settle()
    yield tab
    tab.close()


class TestAHostileClientLearnsNothing:
    def test_opening_alices_chat_by_id_says_not_found_and_shows_nothing(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        bob.send(event(ChatTabState, "open_chat"), path=f"/chat/{alice.chat_id}")
        received = bob.settle()
        assert any(_has(u, "missing", True) for u in received), received
        assert not any(secret in bob.text() for secret in SECRETS)

    def test_setting_the_active_chat_to_alices_and_sending_stores_nothing(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        var = f"{ChatTabState.get_full_name()}.active_chat_id"
        bob.send(
            "reflex___state____state.reflex___state____update_vars_internal_state"
            ".update_vars_internal",
            {"vars": {var: alice.chat_id}},
        )
        bob.send(event(ChatTabState, "send"), {"text": "injected by bob"})
        bob.send(event(ChatTabState, "regenerate"), {"assistant_message_id": "m1"})
        bob.settle()
        history = history_of(app_server, alice)
        assert [m["id"] for m in history] == ["m1"]
        assert not any(secret in bob.text() for secret in SECRETS)

    def test_setvar_events_are_refused_for_every_state(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        before = len(bob.received)
        bob.send(event(OwnerTabState, "setvar"), {"var_name": "_owner", "value": alice.user_id})
        bob.send(event(AccountTabState, "setvar"), {"var_name": "username", "value": "alice"})
        bob.send(event(AccountTabState, "setvar"), {"var_name": "is_admin", "value": True})
        bob.send(event(SharedDirectoryState, "setvar"), {"var_name": "positions", "value": []})
        bob.send(event(AccountTabState, "load"))
        updates = bob.settle()
        assert any(_has(u, "username", "bob") for u in updates)
        assert not any(_has(u, "username", "alice") or _has(u, "is_admin", True) for u in updates)
        assert len(bob.received) > before
        assert not any(secret in bob.text() for secret in SECRETS)

    def test_replaying_alices_client_token_gets_a_fresh_start_and_no_state(
        self, app_server: AppServer, alice: Alice
    ):
        alices_tab = RawTab(
            app_server.backend_url, session_token=app_server.session_token("alice")
        ).connect()
        alices_tab.send(HYDRATE)
        alices_tab.send(event(ChatTabState, "open_chat"), path=f"/chat/{alice.chat_id}")
        assert SECRET_TITLE in str(alices_tab.settle())  # alice herself sees her chat
        alices_tab.close()  # (while it is connected, Reflex hands a second socket a new token)
        thief = RawTab(
            app_server.backend_url,
            session_token=app_server.session_token("bob"),
            client_token=alices_tab.client_token,
        ).connect()
        try:
            # Refused at connect (chatsapp.auth.token_binding): its events run on a fresh tab.
            assert thief.refused.wait(WAIT_S)
            thief.send(HYDRATE)
            thief.send(event(ChatTabState, "open_chat"), path=f"/chat/{alice.chat_id}")
            assert any(_has(u, "missing", True) for u in thief.settle())
            assert not any(secret in thief.text() for secret in SECRETS)
        finally:
            thief.close()

    def test_an_oversized_event_is_refused_and_the_server_keeps_serving(
        self, app_server: AppServer, alice: Alice, bob: RawTab
    ):
        bob.send(event(ChatTabState, "send"), {"text": "x" * 3_000_000})
        assert bob.disconnected.wait(WAIT_S), "the server dropped the oversized frame's connection"
        assert httpx.get(f"{app_server.backend_url}/ping", timeout=WAIT_S).status_code == 200
        assert [m["id"] for m in history_of(app_server, alice)] == ["m1"]
        assert not any(secret in bob.text() for secret in SECRETS)

    def test_signed_out_events_are_redirected_to_sign_in_and_see_nothing(
        self, app_server: AppServer, alice: Alice
    ):
        stranger = RawTab(app_server.backend_url).connect()
        try:
            stranger.send(HYDRATE)
            stranger.send(event(SharedDirectoryState, "link"))
            stranger.send(event(ChatTabState, "open_chat"), path=f"/chat/{alice.chat_id}")
            stranger.wait_for(lambda u: "/sign-in" in str(u.get("events")))
            stranger.settle()
            assert not any(secret in stranger.text() for secret in SECRETS)
            assert alice.user_id not in stranger.text()
        finally:
            stranger.close()


def _has(update: dict, key: str, value: object) -> bool:
    def walk(node: object) -> bool:
        if isinstance(node, dict):
            return any(
                (k in (key, f"{key}_rx_state_") and v == value) or walk(v) for k, v in node.items()
            )
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False

    return walk(update.get("delta", {}))
