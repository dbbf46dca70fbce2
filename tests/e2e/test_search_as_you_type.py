"""Search as you type: a burst of keystrokes costs one search, and the last query's results win."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, WebSocket, expect

from tests.e2e.helpers import chat_item, create_chat, open_tab, rename, send, wait_for_reply_end
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

# Ten keys a second, a quick typist: each key 150 ms inside the 250 ms debounce, so a stall
# of the loaded machine between two keys has to outlast that margin to send a search early.
KEY_DELAY_MS = 100
# Searches a burst of 30-36 keys may send: one, plus one for each such stall (a third of the
# keys); without the debounce it would be one per key.
MAX_SENT = 12


def open_counting_tab(browser: Browser, server: AppServer, handler: str) -> tuple[Page, list[int]]:
    """A new tab, and a live count of the websocket frames it sends that call ``handler``."""
    page = server.signed_in_context(browser, viewport={"width": 1280, "height": 800}).new_page()
    sent = [0]

    def on_socket(socket: WebSocket) -> None:
        def on_frame(payload: str | bytes) -> None:
            text = payload if isinstance(payload, str) else payload.decode(errors="ignore")
            sent[0] += handler in text

        socket.on("framesent", on_frame)

    page.on("websocket", on_socket)  # before the page opens its socket
    page.goto(server.url)
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    return page, sent


class TestTitleSearchAsYouType:
    def test_typing_thirty_characters_sends_a_few_searches_and_shows_the_final_query_chat(
        self, app_server: AppServer, browser: Browser
    ):
        setup = open_tab(browser, app_server)
        wanted = create_chat(setup)
        rename(setup, wanted, "Okapi crossing plans for the school year")
        decoy = create_chat(setup)
        rename(setup, decoy, "Okapi notes")

        page, sent = open_counting_tab(browser, app_server, "set_title_query")
        expect(chat_item(page, wanted)).to_be_visible(timeout=WAIT_MS)
        query = "okapi crossing plans for the s"  # 30 characters; its prefixes match the decoy
        page.locator("#title-search").press_sequentially(query, delay=KEY_DELAY_MS)

        results = page.locator("#chat-list .chat-item")
        expect(results).to_have_count(1, timeout=WAIT_MS)
        expect(results).to_have_attribute("data-chat-id", wanted)
        expect(page.locator("#title-search")).to_have_value(query)
        assert 1 <= sent[0] <= MAX_SENT, (
            f"{sent[0]} title searches sent for {len(query)} keystrokes"
        )


class TestMessageSearchAsYouType:
    def test_typing_quickly_shows_only_the_hits_of_the_final_query(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        # The decoy first: the offline assistant quotes related messages of *earlier* chats.
        decoy = create_chat(tab)
        send(tab, "The capybara documentary was long")
        wait_for_reply_end(tab)
        wanted = create_chat(tab)
        send(tab, "The capybara sanctuary opens on Thursday")
        wait_for_reply_end(tab)

        page, sent = open_counting_tab(browser, app_server, "set_message_query")
        page.locator("#toggle-message-search").click()
        # Message search matches whole words as a phrase: the final query is complete words.
        query = "capybara sanctuary opens on thursday"  # "capybara" alone matches the decoy
        page.locator("#message-search").press_sequentially(query, delay=KEY_DELAY_MS)

        expect(page.locator(f'.message-hit[href*="/chat/{wanted}?"]').first).to_be_visible(
            timeout=WAIT_MS
        )
        expect(page.locator(f'.message-hit[href*="/chat/{decoy}?"]')).to_have_count(0)
        expect(page.locator("#message-search")).to_have_value(query)
        assert 1 <= sent[0] <= MAX_SENT, (
            f"{sent[0]} message searches sent for {len(query)} keystrokes"
        )
