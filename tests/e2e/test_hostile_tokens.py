"""A socket below the browser connects with a client token it learned: alice's tab's.

Reflex sends every live update of a tab (a streamed reply, a sidebar change) to the socket
linked to the tab's token. A socket that connects with alice's token — bob's, or one signed in
as nobody — must be told its token was refused and receive none of alice's frames, while it
sends no event at all; alice's own reconnect with her token goes on as before.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from chatsapp.states.conversation import ChatTabState
from tests.e2e.helpers import (
    NEW_TITLE,
    SECRETS,
    VICTIM,
    Alice,
    alice_on,
    alices_tab,
    assert_refused,
    connect_with,
    event,
    stream_and_rename,
    streaming,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.raw_client import RawTab


@pytest.fixture(scope="module")
def alice(app_server: AppServer) -> Alice:
    return alice_on(app_server)


def assert_learned_nothing(thief: RawTab, alice: Alice, stolen: str) -> None:
    assert_refused(thief, stolen)
    thief.flush()  # every frame fanned out so far has reached the thief's socket
    assert not any(secret in thief.text() for secret in SECRETS), thief.text()[:2000]
    assert alice.user_id not in thief.text()


@pytest.fixture
def closed_tab(app_server: AppServer, alice: Alice) -> str:
    """The client token of a tab of alice's that was open on her chat, then closed."""
    tab = alices_tab(app_server, alice)
    assert "Okavango" in tab.text()  # alice herself sees her chat
    tab.close()
    return tab.client_token


@pytest.fixture
def other_tab(app_server: AppServer, alice: Alice) -> Iterator[RawTab]:
    """Another tab of alice's, open on her chat, where she goes on chatting."""
    tab = alices_tab(app_server, alice)
    yield tab
    tab.close()


class TestASocketWithAnotherPersonsToken:
    def test_bob_connecting_with_a_closed_tabs_token_is_refused_and_receives_nothing(
        self, app_server: AppServer, alice: Alice, closed_tab: str, other_tab: RawTab
    ):
        thief = connect_with(app_server, closed_tab, app_server.session_token("bob"))
        try:
            stream_and_rename(other_tab, alice, NEW_TITLE + " 1")
            assert_learned_nothing(thief, alice, closed_tab)
        finally:
            thief.close()

    def test_bob_connecting_with_an_open_tabs_token_is_refused_and_receives_nothing(
        self, app_server: AppServer, alice: Alice, other_tab: RawTab
    ):
        stolen = other_tab.client_token
        thief = connect_with(app_server, stolen, app_server.session_token("bob"))
        try:
            stream_and_rename(other_tab, alice, NEW_TITLE + " 2")
            assert_learned_nothing(thief, alice, stolen)
        finally:
            thief.close()

    def test_a_signed_out_socket_with_a_closed_tabs_token_is_refused_and_receives_nothing(
        self, app_server: AppServer, alice: Alice, closed_tab: str, other_tab: RawTab
    ):
        thief = connect_with(app_server, closed_tab)
        try:
            stream_and_rename(other_tab, alice, NEW_TITLE + " 3")
            assert_learned_nothing(thief, alice, closed_tab)
        finally:
            thief.close()

    def test_a_shared_state_token_is_refused_at_connect(self, app_server: AppServer, alice: Alice):
        for token in (f"user-{alice.user_id}", f"conv-{alice.chat_id}"):
            thief = connect_with(app_server, token, app_server.session_token("bob"))
            try:
                assert_learned_nothing(thief, alice, token)
            finally:
                thief.close()


class TestANewTabsToken:
    def test_is_swapped_for_one_the_server_made_and_then_kept(self, app_server: AppServer):
        session = app_server.session_token("bob")
        tab = connect_with(app_server, str(uuid.uuid4()), session)
        tab.settle()
        assert len(tab.new_tokens) == 1 and not tab.refusals
        tab.close()
        again = connect_with(app_server, tab.client_token, session)
        try:
            again.settle()
            assert not again.new_tokens and not again.refusals
        finally:
            again.close()


class TestAliceReconnectingWithHerOwnToken:
    def test_a_reload_mid_stream_keeps_her_tab_and_the_reply_goes_on(
        self, app_server: AppServer, alice: Alice
    ):
        tab = alices_tab(app_server, alice)
        tab.send(event(ChatTabState, "send"), {"text": "and the egrets?"}, alice.path)
        tab.wait_for(lambda u: streaming(u) is True)
        tab.close()  # the page reloads: same client token (session storage), new socket
        again = alices_tab(app_server, alice, client_token=tab.client_token)
        try:
            again.wait_for(lambda u: streaming(u) is False)
            assert not again.refusals and not again.new_tokens
            assert "and the egrets?" in again.text()
        finally:
            again.close()


class TestARealTabWhoseTokenIsRefused:
    def test_her_tab_reloaded_after_signing_out_starts_over_on_the_sign_in_page(
        self, app_server: AppServer, alice: Alice, browser: Browser
    ):
        context = app_server.signed_in_context(browser, VICTIM)
        page = context.new_page()
        page.goto(app_server.url + alice.path)
        expect(page.get_by_text("Okavango").first).to_be_visible(timeout=WAIT_MS)
        bound = page.evaluate("window.sessionStorage.getItem('token')")
        context.clear_cookies()  # signed out: the reload's socket names nobody
        page.reload()
        expect(page).to_have_url(re.compile(r"/sign-in"), timeout=WAIT_MS)
        assert page.evaluate("window.sessionStorage.getItem('token')") not in (bound, None)
        expect(page.get_by_text("Okavango")).to_have_count(0)
