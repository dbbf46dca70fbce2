"""User stories inside one chat: streaming in every tab, safety, limits."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from tests.e2e.app_server import AppServer
from tests.e2e.test_live_sidebar import TIMEOUT_MS, create_chat, open_tab


def send(page: Page, text: str) -> None:
    page.locator("#composer").fill(text)
    page.locator("#composer").press("Enter")


class TestStreaming:
    def test_a_reply_streaming_in_one_tab_streams_in_the_other_and_both_end_equal(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server.url)
        chat_id = create_chat(tab_a)
        tab_b = open_tab(browser, f"{app_server.url}/chat/{chat_id}")
        expect(tab_b.locator("#chat-title")).to_be_visible(timeout=TIMEOUT_MS)

        send(tab_a, "Tell me about the offline assistant")
        expect(tab_a.locator("#streaming-reply")).to_be_visible(timeout=TIMEOUT_MS)
        expect(tab_b.locator("#streaming-reply")).to_be_visible(timeout=TIMEOUT_MS)
        for tab in (tab_a, tab_b):
            expect(tab.locator("#streaming-reply")).to_have_count(0, timeout=TIMEOUT_MS)
            expect(tab.locator(".message-assistant .message-text")).to_have_count(1)
        reply_a = tab_a.locator(".message-assistant .message-text").inner_text()
        reply_b = tab_b.locator(".message-assistant .message-text").inner_text()
        assert reply_a and reply_a == reply_b
        assert tab_a.locator(".message-user").inner_text() == (
            tab_b.locator(".message-user").inner_text()
        )


class TestSafety:
    def test_html_and_script_in_a_message_render_as_text_and_never_run(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server.url)
        dialogs: list[str] = []
        tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        create_chat(tab)
        hostile = "<img src=x onerror=alert(1)> and <script>alert(2)</script>"
        send(tab, hostile)
        user_message = tab.locator(".message-user .message-text")
        expect(user_message).to_contain_text("onerror=alert(1)", timeout=TIMEOUT_MS)
        expect(user_message).to_contain_text("<script>alert(2)</script>")
        assert tab.locator(".message-user img").count() == 0
        tab.wait_for_timeout(1500)
        assert dialogs == []

    def test_an_oversize_message_is_refused_and_nothing_is_sent(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server.url)
        create_chat(tab)
        tab.locator("#composer").fill("x" * (256 * 1024 + 1))
        tab.locator("#send").click()
        expect(tab.locator("#input-error")).to_contain_text("limit", timeout=TIMEOUT_MS)
        assert tab.locator(".message-user").count() == 0
