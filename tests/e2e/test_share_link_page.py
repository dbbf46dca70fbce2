"""A read-only share link against the running app (issue 28 items 4 and 5, docs/sharing.md
"The link page"): the owner ends a link at a chosen message, a browser with no account reads
that snapshot rendered like the app, raw HTTP finds nothing else in the page or its headers,
and a revoke from the owner's list makes the page one identical 404.
"""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Browser, Page, expect

from chatsapp.routes.share_link import PAGE_POLICY
from tests.e2e.helpers import (
    add_member,
    create_chat,
    open_share_dialog,
    open_tab,
    send,
    wait_for_reply_end,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS, WAIT_S

OWNER, PAL = "linkowner", "linkpal"
FIRST = "First: **bold** and $x^2$"
LATER = "Second, after the chosen message"
SECRET = "Secret plans in another chat"


def replies(page: Page, count: int) -> None:
    expect(page.locator(".message-assistant")).to_have_count(count, timeout=WAIT_MS)
    wait_for_reply_end(page)


def link_up_to_the_first_reply(owner: Page) -> str:
    """From the open share dialog: end the link at message #2 (the first reply); its URL."""
    dialog = owner.locator("#share-dialog")
    dialog.locator("#link-up-to").click()
    expect(owner.get_by_role("option")).to_have_count(4, timeout=WAIT_MS)
    owner.get_by_role("option", name=re.compile(r"^#2 ")).click()
    expect(dialog.locator("#link-up-to")).to_contain_text("#2 ", timeout=WAIT_MS)
    dialog.locator("#create-link").click()
    expect(dialog.locator("#new-link-url")).to_contain_text("/share/", timeout=WAIT_MS)
    expect(dialog.locator(".share-link-row")).to_contain_text("2 messages")
    return dialog.locator("#new-link-url").inner_text()


def assert_only_the_snapshot(server: AppServer, answer: httpx.Response, hidden: list[str]) -> None:
    assert answer.status_code == 200
    assert answer.headers["x-robots-tag"].startswith("noindex")
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["content-security-policy"] == PAGE_POLICY
    assert "set-cookie" not in answer.headers  # no session, no state for a reader
    body = answer.text
    assert "<strong>bold</strong>" in body and "<msup>" in body and OWNER in body
    for absent in [*hidden, LATER, SECRET, PAL, "<script", "_event", "socket", "token"]:
        assert absent not in body, absent


class TestAShareLink:
    def test_an_owner_links_up_to_a_message_a_stranger_reads_it_and_a_revoke_is_a_404(
        self, app_server: AppServer, browser: Browser
    ):
        owner = open_tab(browser, app_server, user=OWNER)
        app_server.session_token(PAL)  # an account to share with (it writes nothing)
        other_chat = create_chat(owner)
        send(owner, SECRET)
        replies(owner, 1)
        chat_id = create_chat(owner)
        send(owner, FIRST)
        replies(owner, 1)
        send(owner, LATER)
        replies(owner, 2)
        open_share_dialog(owner)
        add_member(owner, PAL)
        url = link_up_to_the_first_reply(owner)

        # A browser with no account reads the snapshot, rendered like the app.
        stranger = browser.new_context().new_page()
        stranger.goto(app_server.url + url)
        expect(stranger.locator("article")).to_have_count(2, timeout=WAIT_MS)
        expect(stranger.locator("article strong")).to_have_text("bold")
        expect(stranger.locator("article math")).to_have_count(1)
        expect(stranger.get_by_text(LATER)).to_have_count(0)

        # Raw HTTP: the page and its headers hold the snapshot and nothing else.
        owner_account = app_server.accounts().user_by_username(OWNER)
        assert owner_account is not None
        hidden = [chat_id, other_chat, owner_account.id]
        assert_only_the_snapshot(
            app_server, httpx.get(app_server.url + url, timeout=WAIT_S), hidden
        )

        # The owner revokes it from the list: the next request answers 404, byte for byte
        # the page of a token that never existed.
        owner.locator("#share-dialog .share-link-row .revoke-link").click()
        expect(owner.locator("#share-notice")).to_contain_text("Link revoked", timeout=WAIT_MS)
        expect(owner.locator("#share-dialog .share-link-row")).to_have_count(0)
        reloaded = stranger.reload()
        assert reloaded is not None and reloaded.status == 404
        expect(stranger.get_by_text("does not exist or was revoked")).to_be_visible()
        revoked = httpx.get(app_server.url + url, timeout=WAIT_S)
        never = httpx.get(app_server.url + "/share/" + "A" * 43, timeout=WAIT_S)
        assert revoked.status_code == never.status_code == 404
        assert revoked.content == never.content
        assert revoked.headers["content-security-policy"] == PAGE_POLICY
        assert revoked.headers["cache-control"] == "no-store"
        stranger.context.close()
