"""Typing into a field while the server is slow keeps every character.

A field bound to the server (each pause sends what was typed, the server echoes it back) loses
what is typed after a pause when the echo arrives late: the field is set back to the echoed
text. Here every frame the server sends reaches the page 700 ms late (an init script delays
the socket's messages, in order), and a person types a word at a time, pausing after each
word long enough for the field to report it. What they typed in full is what is saved.
"""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import agent_row, chat_item, create_chat, open_tab, send, wait_for_reply_end
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

SLOW_SERVER_MS = 700
# Every message from the server is handed to the page SLOW_SERVER_MS later, in order.
SLOW_SOCKET = """
(() => {
  const Native = window.WebSocket;
  const late = (handler, target) => (event) =>
    setTimeout(() => handler.call(target, event), SLOW_MS);
  window.WebSocket = class extends Native {
    addEventListener(type, listener, options) {
      if (type !== "message") return super.addEventListener(type, listener, options);
      return super.addEventListener(type, late(listener, this), options);
    }
    set onmessage(handler) {
      super.onmessage = handler ? late(handler, this) : handler;
    }
  };
})();
""".replace("SLOW_MS", str(SLOW_SERVER_MS))
KEY_DELAY_MS = 40
PAUSE_MS = 450  # longer than a field's 300 ms debounce: what was typed so far is reported


def type_word_by_word(page: Page, selector: str, text: str) -> None:
    """Type ``text`` a word at a time, pausing after each word as people do."""
    field = page.locator(selector)
    for word in text.split(" "):
        field.press_sequentially(word + " ", delay=KEY_DELAY_MS)
        page.wait_for_timeout(PAUSE_MS)
    field.press("Backspace")  # the last word's space


def slow_tab(browser: Browser, server: AppServer, user: str) -> Page:
    page = open_tab(browser, server, user=user)
    page.context.add_init_script(SLOW_SOCKET)
    page.reload()
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    return page


class TestTypingWhileTheServerIsSlow:
    def test_a_rename_typed_with_a_pause_keeps_every_character(
        self, app_server: AppServer, browser: Browser
    ):
        page = slow_tab(browser, app_server, "tessa")
        chat_id = create_chat(page)
        row = chat_item(page, chat_id)
        row.hover()
        row.locator(".chat-menu").click()
        page.locator(".rename-chat").click()
        page.locator(".rename-input input").press("Control+a")
        type_word_by_word(page, ".rename-input input", "Trip to Lisbon and Porto in the spring")
        page.locator(".rename-input input").press("Enter")
        expect(row.locator(".chat-title")).to_have_text(
            "Trip to Lisbon and Porto in the spring", timeout=WAIT_MS
        )

    def test_an_edited_message_typed_with_a_pause_is_sent_in_full(
        self, app_server: AppServer, browser: Browser
    ):
        page = slow_tab(browser, app_server, "tessa")
        create_chat(page)
        send(page, "What is a quokka")
        wait_for_reply_end(page)
        page.locator(".message-user .edit-message").click()
        page.locator(".edit-box textarea").press("Control+a")
        type_word_by_word(page, ".edit-box textarea", "Where do quokkas live in the wild")
        page.locator(".edit-submit").click()
        expect(page.locator(".message-user .message-text")).to_have_text(
            "Where do quokkas live in the wild", timeout=WAIT_MS
        )

    def test_a_fact_typed_with_pauses_is_remembered_in_full_and_the_field_empties(
        self, app_server: AppServer, browser: Browser
    ):
        page = slow_tab(browser, app_server, "tessa")
        page.locator("#toggle-memory").click()
        type_word_by_word(page, "#memory-append", "Keeps two cats called Miso and Tofu")
        page.locator("#memory-append").press("Enter")
        expect(page.locator("#memory-panel .memory-content")).to_contain_text(
            "Keeps two cats called Miso and Tofu", timeout=WAIT_MS
        )
        expect(page.locator("#memory-append")).to_have_value("", timeout=WAIT_MS)

    def test_an_agent_typed_with_pauses_is_saved_in_full(
        self, app_server: AppServer, browser: Browser
    ):
        page = slow_tab(browser, app_server, "tessa")
        page.goto(f"{app_server.url}/agents")
        page.locator("#agent-new").click()
        type_word_by_word(page, "#agent-name", "Planner for slow trains")
        type_word_by_word(page, "#agent-instructions", "Answer with train times and one tip")
        page.locator("#agent-save").click()
        row = agent_row(page, "Planner for slow trains")
        expect(row).to_be_visible(timeout=WAIT_MS)
        row.locator(".agent-edit").click()
        expect(page.locator("#agent-instructions")).to_have_value(
            "Answer with train times and one tip", timeout=WAIT_MS
        )
