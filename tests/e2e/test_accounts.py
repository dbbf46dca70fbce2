"""Accounts in real Chromium, each person in a browser context of their own (issue 11).

A fresh install of its own (the first visitor becomes the admin only with the setup code), then
people side by side: each sees only their own sidebar, chats and live updates.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from backend.accounts import CONSOLE_ACTOR, MAX_FAILURES_PER_ACCOUNT
from tests.e2e.helpers import chat_item, create_chat, open_tab, send, wait_for_reply_end
from tests.support.app_server import TEST_PASSWORD, AppServer, start_app
from tests.support.deadlines import WAIT_MS


@pytest.fixture(scope="module")
def fresh_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("accounts")
    env = {"CHATS_OFFLINE_CHUNK_DELAY_S": "0.05"}
    server = start_app(base / "data", base / "app.log", env=env, mode="prod")
    yield server
    server.stop()


def fill_and_submit(page: Page, form: str, **fields: str) -> None:
    for name, value in fields.items():
        page.locator(f"#{form} [name={name}]").fill(value)
    page.locator(f"#{form} [type=submit]").click()


def sign_in(page: Page, username: str, password: str = TEST_PASSWORD) -> None:
    fill_and_submit(page, "sign-in-form", username=username, password=password)


def disable(server: AppServer, username: str) -> None:
    """What an admin's "Disable" does, from the console."""
    accounts = server.accounts()
    try:
        user = accounts.user_by_username(username)
        assert user is not None
        accounts.disable_user(CONSOLE_ACTOR, user.id)
    finally:
        accounts.close()


def open_signed_in(browser: Browser, server: AppServer, path: str, user: str) -> Page:
    """A tab signed in as ``user`` on a page without the chat layout (admin, account)."""
    page = server.signed_in_context(browser, user).new_page()
    page.goto(server.url + path)
    return page


def set_policy(server: AppServer, policy: str) -> None:
    accounts = server.accounts()
    try:
        accounts.set_signup_policy(CONSOLE_ACTOR, policy)  # type: ignore[arg-type]
    finally:
        accounts.close()


class TestFirstRun:
    def test_the_first_visitor_becomes_admin_only_with_the_printed_setup_code(
        self, fresh_app: AppServer, browser: Browser
    ):
        page = browser.new_context().new_page()
        page.goto(fresh_app.url)
        expect(page).to_have_url(re.compile(r"/setup"), timeout=WAIT_MS)
        fill_and_submit(
            page, "setup-form", setup_code="WRONG-CODE", username="owner", password=TEST_PASSWORD
        )
        expect(page.locator("#auth-error")).to_contain_text("setup code", timeout=WAIT_MS)
        accounts = fresh_app.accounts()
        try:
            code = accounts.setup_code_for_console()
        finally:
            accounts.close()
        assert code is not None
        fill_and_submit(
            page, "setup-form", setup_code=code, username="owner", password=TEST_PASSWORD
        )
        expect(page.locator("#account-name")).to_have_text("owner", timeout=WAIT_MS)
        expect(page.locator("#to-admin")).to_be_visible()
        page.goto(fresh_app.url + "/setup")  # once set up, the form is gone for everyone
        expect(page).to_have_url(re.compile(r"/(sign-in|chat/|$)"), timeout=WAIT_MS)


class TestSignUpAndBack:
    def test_sign_up_chat_sign_out_and_sign_back_in_to_find_the_chat(
        self, fresh_app: AppServer, browser: Browser
    ):
        fresh_app.session_token("owner", admin=True)  # set up, whatever ran before
        set_policy(fresh_app, "open")
        page = browser.new_context().new_page()
        page.goto(fresh_app.url + "/sign-up")
        fill_and_submit(page, "sign-up-form", username="carol", password=TEST_PASSWORD)
        expect(page.locator("#account-name")).to_have_text("carol", timeout=WAIT_MS)
        chat_id = create_chat(page)
        send(page, "Carol's note about the lighthouse")
        wait_for_reply_end(page)
        page.locator("#sign-out").click()
        expect(page).to_have_url(re.compile(r"/sign-in"), timeout=WAIT_MS)
        expect(page.locator("#auth-notice")).to_contain_text("signed out")
        page.goto(fresh_app.url + f"/chat/{chat_id}")  # signed out: the chat is not shown
        expect(page).to_have_url(re.compile(r"/sign-in"), timeout=WAIT_MS)
        sign_in(page, "carol")
        expect(page).to_have_url(re.compile(rf"/chat/{chat_id}"), timeout=WAIT_MS)
        expect(chat_item(page, chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#transcript")).to_contain_text("lighthouse")

    def test_every_form_posts_to_the_address_the_page_was_reached_at(
        self, fresh_app: AppServer, browser: Browser
    ):
        # Production pages are prerendered: a form holding the build's "localhost" posted
        # elsewhere for anyone who reached the app by another name (here 127.0.0.1).
        fresh_app.session_token("owner", admin=True)
        pages = [
            (browser.new_context().new_page(), "/sign-in"),
            (fresh_app.signed_in_context(browser, "owner").new_page(), "/account"),
        ]
        for page, path in pages:
            page.goto(fresh_app.url + path)
            expect(page.locator("form").first).to_be_attached(timeout=WAIT_MS)
            origins = page.evaluate("() => [...document.forms].map(f => new URL(f.action).origin)")
            assert origins and set(origins) == {fresh_app.url}, (path, origins)

    def test_sign_up_is_closed_by_default_and_says_so(self, fresh_app: AppServer, browser: Browser):
        fresh_app.session_token("owner", admin=True)
        set_policy(fresh_app, "closed")
        page = browser.new_context().new_page()
        page.goto(fresh_app.url + "/sign-up")
        expect(page.locator("#sign-up-closed")).to_contain_text("closed", timeout=WAIT_MS)
        expect(page.locator("#sign-up-form")).to_have_count(0)


class TestPeopleSideBySide:
    def test_two_people_streaming_at_once_each_see_only_their_own_sidebar(
        self, fresh_app: AppServer, browser: Browser
    ):
        dave = open_tab(browser, fresh_app, user="dave")
        erin = open_tab(browser, fresh_app, user="erin")
        dave_chat = create_chat(dave)
        erin_chat = create_chat(erin)
        send(dave, "Dave's plan for the pumpkin festival")
        send(erin, "Erin's plan for the kite regatta")
        wait_for_reply_end(dave)
        wait_for_reply_end(erin)
        expect(chat_item(dave, dave_chat)).to_be_visible()
        expect(chat_item(erin, erin_chat)).to_be_visible()
        expect(chat_item(dave, erin_chat)).to_have_count(0)
        expect(chat_item(erin, dave_chat)).to_have_count(0)
        assert "kite" not in dave.content() and "pumpkin" not in erin.content()

    def test_another_persons_chat_url_shows_not_found_and_nothing_of_theirs(
        self, fresh_app: AppServer, browser: Browser
    ):
        dave = open_tab(browser, fresh_app, user="dave")
        chat_id = create_chat(dave)
        send(dave, "Dave's secret recipe uses cardamom")
        wait_for_reply_end(dave)
        erin = open_tab(browser, fresh_app, f"/chat/{chat_id}", user="erin")
        expect(erin.locator("#missing-chat")).to_be_visible(timeout=WAIT_MS)
        assert "cardamom" not in erin.content()


class TestSessionsEnd:
    def test_signing_out_in_one_tab_signs_out_the_other_tabs_at_once(
        self, fresh_app: AppServer, browser: Browser
    ):
        context = fresh_app.signed_in_context(browser, "frank")
        first, second = context.new_page(), context.new_page()
        for tab in (first, second):
            tab.goto(fresh_app.url)
            expect(tab.locator("#account-name")).to_have_text("frank", timeout=WAIT_MS)
        first.locator("#sign-out").click()
        expect(second.locator("#signed-out-notice")).to_be_visible(timeout=WAIT_MS)
        expect(second.locator("#sidebar")).to_have_count(0)

    def test_an_account_disabled_by_an_admin_is_signed_out_live(
        self, fresh_app: AppServer, browser: Browser
    ):
        # A name of its own each run: the account ends disabled, and a rerun signs in anew.
        name = f"gina-{uuid.uuid4().hex[:8]}"
        tab = open_tab(browser, fresh_app, user=name)
        disable(fresh_app, name)
        expect(tab.locator("#signed-out-notice")).to_be_visible(timeout=WAIT_MS)

    def test_a_click_just_after_the_account_is_disabled_shows_the_notice_too(
        self, fresh_app: AppServer, browser: Browser
    ):
        # The live sign-out polls once a second; a click made before it noticed is the first
        # to find the session gone, and the tab says so (before: it started over on the
        # sign-in page with no word of why).
        name = f"gus-{uuid.uuid4().hex[:8]}"
        tab = open_tab(browser, fresh_app, user=name)
        disable(fresh_app, name)
        # Clicked at once, not after Playwright's checks that the page is still (on a loaded
        # machine those outlasted the poll, which took the page away from under the click:
        # run 41). Should the poll still be first, the tab shows the same notice.
        tab.evaluate("document.getElementById('new-chat')?.click()")
        expect(tab.locator("#signed-out-notice")).to_be_visible(timeout=WAIT_MS)
        expect(tab.locator("#sidebar")).to_have_count(0)
        assert "/sign-in" not in tab.url

    def test_sign_in_again_from_the_notice_signs_in_in_the_same_tab(
        self, fresh_app: AppServer, browser: Browser
    ):
        name = f"flo-{uuid.uuid4().hex[:8]}"
        context = fresh_app.signed_in_context(browser, name)
        first, second = context.new_page(), context.new_page()
        for tab in (first, second):
            tab.goto(fresh_app.url)
            expect(tab.locator("#account-name")).to_have_text(name, timeout=WAIT_MS)
        first.locator("#sign-out").click()
        expect(second.locator("#signed-out-notice")).to_be_visible(timeout=WAIT_MS)
        second.locator("#sign-in-again").click()
        expect(second.locator("#sign-in-form")).to_be_visible(timeout=WAIT_MS)
        sign_in(second, name)
        expect(second.locator("#account-name")).to_have_text(name, timeout=WAIT_MS)
        expect(second.locator("#signed-out-notice")).to_have_count(0)

    def test_repeated_wrong_passwords_are_throttled_with_a_try_again_time(
        self, fresh_app: AppServer, browser: Browser
    ):
        fresh_app.session_token("hank")
        page = browser.new_context().new_page()
        page.goto(fresh_app.url + "/sign-in")
        for _ in range(MAX_FAILURES_PER_ACCOUNT):
            sign_in(page, "hank", "not the password")
            expect(page.locator("#auth-error")).to_be_visible(timeout=WAIT_MS)
        sign_in(page, "hank")  # even the right password waits now
        expect(page.locator("#auth-error")).to_contain_text("Try again in", timeout=WAIT_MS)

    def test_unknown_user_and_wrong_password_read_the_same(
        self, fresh_app: AppServer, browser: Browser
    ):
        fresh_app.session_token("ivan")
        page = browser.new_context().new_page()
        page.goto(fresh_app.url + "/sign-in")
        sign_in(page, "nobody-by-this-name", "whatever password")
        unknown = page.locator("#auth-error").inner_text(timeout=WAIT_MS)
        sign_in(page, "ivan", "wrong password here")
        expect(page.locator("#auth-error")).to_have_text(unknown, timeout=WAIT_MS)


class TestAdminPage:
    def test_an_admin_invites_someone_who_signs_up_with_the_link(
        self, fresh_app: AppServer, browser: Browser
    ):
        set_policy(fresh_app, "invite")
        fresh_app.session_token("owner", admin=True)
        admin = open_signed_in(browser, fresh_app, "/admin", "owner")
        admin.locator("#new-invite").click()
        link = admin.locator("#invite-link").inner_text(timeout=WAIT_MS)
        assert "/sign-up?invite=" in link
        guest = browser.new_context().new_page()
        guest.goto(fresh_app.url + "/sign-up?" + link.split("?", 1)[1])
        fill_and_submit(guest, "sign-up-form", username="judy", password=TEST_PASSWORD)
        expect(guest.locator("#account-name")).to_have_text("judy", timeout=WAIT_MS)

    def test_a_person_who_is_not_an_admin_is_refused_the_admin_page(
        self, fresh_app: AppServer, browser: Browser
    ):
        tab = open_signed_in(browser, fresh_app, "/admin", "kate")
        expect(tab.locator("#admin-refused")).to_be_visible(timeout=WAIT_MS)
