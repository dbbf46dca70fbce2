"""User stories inside one chat: streaming in every tab, safety, limits."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, expect

from tests.e2e.helpers import TINY_PNG, create_chat, open_tab, send, wait_for_reply_end
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

# Keeps the longest text the reply being written showed (it arrives in pieces: the page joins
# them, chatsapp.live.stream_pieces).
WATCH_LONGEST_STREAMED = """() => {
  window.__longestStreamed = "";
  new MutationObserver(() => {
    const text = document.getElementById("streaming-reply")?.innerText ?? "";
    if (text.length > window.__longestStreamed.length) window.__longestStreamed = text;
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


class TestStreaming:
    def test_a_reply_streaming_in_one_tab_streams_in_the_other_and_both_end_equal(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server)
        chat_id = create_chat(tab_a)
        tab_b = open_tab(browser, app_server, f"/chat/{chat_id}")
        expect(tab_b.locator("#open-chat-id")).to_have_text(chat_id, timeout=WAIT_MS)

        tab_b.evaluate(WATCH_LONGEST_STREAMED)
        send(tab_a, "Tell me about the offline assistant")
        expect(tab_a.locator("#streaming-reply")).to_be_visible(timeout=WAIT_MS)
        expect(tab_b.locator("#streaming-reply")).to_be_visible(timeout=WAIT_MS)
        for tab in (tab_a, tab_b):
            expect(tab.locator("#streaming-reply")).to_have_count(0, timeout=WAIT_MS)
            expect(tab.locator(".message-assistant .message-text")).to_have_count(1)
        reply_a = tab_a.locator(".message-assistant .message-text").inner_text()
        reply_b = tab_b.locator(".message-assistant .message-text").inner_text()
        assert reply_a and reply_a == reply_b
        # The other tab watched the reply grow past the first piece (512 characters), its
        # pieces joined in order: what it last showed is the reply, or nearly all of it.
        streamed = tab_b.evaluate("() => window.__longestStreamed")
        assert len(reply_b) > 512, "the reply should be longer than one piece"
        assert len(streamed) > 0.8 * len(reply_b), (len(streamed), len(reply_b))
        assert reply_b.startswith(streamed[:400]), (streamed[:400], reply_b[:400])
        assert tab_a.locator(".message-user").inner_text() == (
            tab_b.locator(".message-user").inner_text()
        )


class TestSafety:
    def test_html_and_script_in_a_message_render_as_text_and_never_run(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        dialogs: list[str] = []
        tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        create_chat(tab)
        hostile = "<img src=x onerror=alert(1)> and <script>alert(2)</script>"
        send(tab, hostile)
        user_message = tab.locator(".message-user .message-text")
        expect(user_message).to_contain_text("onerror=alert(1)", timeout=WAIT_MS)
        expect(user_message).to_contain_text("<script>alert(2)</script>")
        wait_for_reply_end(tab)  # the whole transcript has been rendered, reply included
        # No <img> in the transcript means no onerror can fire later; React never runs a
        # <script> it renders. A canary alert raised now proves dialogs are being caught: any
        # dialog the message had opened would have been reported before it.
        assert tab.locator("#transcript img").count() == 0
        with tab.expect_event("dialog", timeout=WAIT_MS):
            tab.evaluate("() => { setTimeout(() => alert('canary'), 0); }")
        assert dialogs == ["canary"]

    def test_an_oversize_message_is_refused_and_nothing_is_sent(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        create_chat(tab)
        tab.locator("#composer").fill("x" * (256 * 1024 + 1))
        tab.locator("#send").click()
        expect(tab.locator("#input-error")).to_contain_text("limit", timeout=WAIT_MS)
        assert tab.locator(".message-user").count() == 0


class TestBranches:
    def test_regenerate_makes_a_sibling_reply_and_both_stay_navigable(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        create_chat(tab)
        send(tab, "remember that I water the plants on Sundays")
        wait_for_reply_end(tab)
        tab.locator(".message-assistant .regenerate").click()
        expect(tab.locator(".message-assistant .branch-position")).to_have_text(
            "2/2", timeout=WAIT_MS
        )
        wait_for_reply_end(tab)
        tab.locator(".message-assistant .branch-prev").click()
        expect(tab.locator(".message-assistant .branch-position")).to_have_text(
            "1/2", timeout=WAIT_MS
        )
        tab.locator(".message-assistant .branch-next").click()
        expect(tab.locator(".message-assistant .branch-position")).to_have_text(
            "2/2", timeout=WAIT_MS
        )

    def test_editing_a_message_starts_a_new_branch_beside_the_original(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        create_chat(tab)
        send(tab, "what do you know about me?")
        wait_for_reply_end(tab)
        tab.locator(".message-user .edit-message").click()
        tab.locator(".edit-box textarea").fill("what did I say about plants?")
        tab.locator(".edit-submit").click()
        expect(tab.locator(".message-user .message-text")).to_have_text(
            "what did I say about plants?", timeout=WAIT_MS
        )
        expect(tab.locator(".message-user .branch-position")).to_have_text("2/2")
        wait_for_reply_end(tab)
        tab.locator(".message-user .branch-prev").click()
        expect(tab.locator(".message-user .message-text")).to_have_text(
            "what do you know about me?", timeout=WAIT_MS
        )


class TestSearchEverything:
    def test_a_message_search_hit_opens_its_chat_at_the_highlighted_message(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        target = create_chat(tab)
        send(tab, "The quokka named Pebble lives on Rottnest")
        wait_for_reply_end(tab)
        create_chat(tab)
        tab.locator("#toggle-message-search").click()
        tab.locator("#message-search").fill("quokka named Pebble")
        tab.locator("#message-search").press("Enter")
        hit = tab.locator(".message-hit").first
        expect(hit).to_be_visible(timeout=WAIT_MS)
        expect(hit.locator("mark").first).to_be_visible()
        hit.click()
        expect(tab).to_have_url(re.compile(rf"/chat/{target}\?m="), timeout=WAIT_MS)
        highlighted = tab.locator(".message-user").filter(has_text="quokka named Pebble")
        expect(highlighted).to_be_visible(timeout=WAIT_MS)


class TestAttachments:
    def test_an_attached_image_is_stored_and_shown_inline_in_the_message(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        create_chat(tab)
        tab.locator("#image-upload input[type=file]").set_input_files(
            files=[{"name": "dot.png", "mimeType": "image/png", "buffer": TINY_PNG}]
        )
        expect(tab.locator("#pending-images img")).to_have_count(1, timeout=WAIT_MS)
        send(tab, "What is in this picture?")
        image = tab.locator(".message-user img")
        expect(image).to_have_count(1, timeout=WAIT_MS)
        assert (image.get_attribute("src") or "").startswith("data:image/png;base64,")
        tab.reload()
        expect(tab.locator(".message-user img")).to_have_count(1, timeout=WAIT_MS)

    def test_an_image_over_the_size_limit_is_refused_before_sending(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        create_chat(tab)
        big = TINY_PNG + b"\0" * (5 * 1024 * 1024)
        tab.locator("#image-upload input[type=file]").set_input_files(
            files=[{"name": "big.png", "mimeType": "image/png", "buffer": big}]
        )
        expect(tab.get_by_text("the limit is")).to_be_visible(timeout=WAIT_MS)
        expect(tab.locator("#pending-images img")).to_have_count(0)
