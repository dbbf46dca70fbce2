"""User stories: ``/`` opens your latest chat, and "Start a conversation" is for people who
have none (someone with chats never sees it flash before the redirect)."""

from __future__ import annotations

from playwright.sync_api import Browser, expect

from tests.e2e.helpers import create_chat, open_tab
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

# Records, from the first script the page runs, whether "Start a conversation" was ever shown.
WATCH_EMPTY_STATE = """
window.__emptyStateSeen = false;
new MutationObserver(() => {
    if (document.getElementById('empty-state')) window.__emptyStateSeen = true;
}).observe(document, {childList: true, subtree: true});
"""


class TestHomePage:
    def test_someone_with_chats_lands_on_the_latest_without_the_empty_state(
        self, app_server: AppServer, browser: Browser
    ):
        first = open_tab(browser, app_server, user="homer")
        create_chat(first)
        latest = create_chat(first)

        context = app_server.signed_in_context(browser, "homer")
        context.add_init_script(WATCH_EMPTY_STATE)
        page = context.new_page()
        page.goto(app_server.url + "/")
        page.wait_for_url(f"**/chat/{latest}", timeout=WAIT_MS)
        expect(page.locator("#composer")).to_be_visible(timeout=WAIT_MS)
        assert page.evaluate("window.__emptyStateSeen") is False

    def test_someone_without_chats_is_offered_to_start_one(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_tab(browser, app_server, user="newcomer")
        expect(page.locator("#empty-state")).to_contain_text("Start a conversation")
        page.locator("#empty-new-chat").click()
        page.wait_for_url("**/chat/*", timeout=WAIT_MS)
