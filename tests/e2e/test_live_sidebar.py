"""User stories across tabs: the sidebar and memory are live in every tab of the user."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, expect

from tests.e2e.helpers import chat_item, create_chat, open_tab
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS


class TestSidebarSync:
    def test_create_rename_and_delete_in_one_tab_appear_in_the_other(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server)
        tab_b = open_tab(browser, app_server)
        chat_id = create_chat(tab_a)
        expect(chat_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)

        chat_item(tab_a, chat_id).locator(".chat-menu").click()
        tab_a.locator(".rename-chat").click()
        tab_a.locator(".rename-input input").fill("Trip to Lisbon")
        tab_a.locator(".rename-input input").press("Enter")
        expect(chat_item(tab_b, chat_id)).to_contain_text("Trip to Lisbon", timeout=WAIT_MS)

        chat_item(tab_a, chat_id).locator(".chat-menu").click()
        tab_a.locator(".delete-chat").click()
        expect(chat_item(tab_b, chat_id)).to_have_count(0, timeout=WAIT_MS)
        expect(tab_a.locator("#undo-bar")).to_be_visible()

    def test_a_chat_deleted_in_one_tab_leaves_the_other_tab_with_a_notice(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server)
        keep = create_chat(tab_a)
        doomed = create_chat(tab_a)
        tab_b = open_tab(browser, app_server, f"/chat/{doomed}")
        expect(tab_b.locator("#open-chat-id")).to_have_text(doomed, timeout=WAIT_MS)

        chat_item(tab_a, doomed).locator(".chat-menu").click()
        tab_a.locator(".delete-chat").click()

        expect(tab_b.get_by_text("This chat was deleted in another tab.")).to_be_visible(
            timeout=WAIT_MS
        )
        tab_b.wait_for_url(re.compile(rf"/chat/{keep}$|/$"), timeout=WAIT_MS, wait_until="commit")

    def test_undo_restores_a_deleted_chat_everywhere(self, app_server: AppServer, browser: Browser):
        tab_a = open_tab(browser, app_server)
        tab_b = open_tab(browser, app_server)
        chat_id = create_chat(tab_a)
        chat_item(tab_a, chat_id).locator(".chat-menu").click()
        tab_a.locator(".delete-chat").click()
        expect(chat_item(tab_b, chat_id)).to_have_count(0, timeout=WAIT_MS)
        tab_a.locator("#undo-delete").click()
        expect(chat_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)


class TestMemorySync:
    def test_a_fact_added_in_one_tab_appears_in_the_other(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server)
        tab_b = open_tab(browser, app_server)
        for tab in (tab_a, tab_b):
            tab.locator("#toggle-memory").click()
            expect(tab.locator("#memory-panel")).to_be_visible()
        tab_a.locator("#memory-append").fill("Prefers green tea")
        tab_a.locator("#memory-append").press("Enter")
        expect(tab_b.locator("#memory-panel")).to_contain_text("Prefers green tea", timeout=WAIT_MS)


class TestKeyboardAndPaging:
    def test_ctrl_shift_o_starts_a_new_chat(self, app_server: AppServer, browser: Browser):
        tab = open_tab(browser, app_server)
        before = tab.url
        tab.keyboard.press("Control+Shift+O")
        expect(tab).not_to_have_url(before, timeout=WAIT_MS)
        expect(tab).to_have_url(re.compile(r"/chat/[^/?]+$"), timeout=WAIT_MS)

    def test_typing_a_title_sends_nothing_and_escape_keeps_the_old_one(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        chat_id = create_chat(tab)
        row = chat_item(tab, chat_id)
        expect(row).to_be_visible(timeout=WAIT_MS)
        before = row.locator(".chat-title").inner_text()
        events: list[str] = []  # socket.io events this tab sends ("42..." frames)
        tab.on(
            "websocket",
            lambda socket: socket.on(
                "framesent",
                lambda frame: events.append(frame) if str(frame).startswith("42") else None,
            ),
        )
        tab.reload()  # the listener sees the page's next socket
        expect(row).to_be_visible(timeout=WAIT_MS)
        row.locator(".chat-menu").click()
        tab.locator(".rename-chat").click()
        field = tab.locator(".rename-input input")
        expect(field).to_be_focused(timeout=WAIT_MS)
        sent_before_typing = len(events)
        field.press_sequentially("Not this title", delay=20)
        assert len(events) == sent_before_typing, events[sent_before_typing:]
        field.press("Escape")
        expect(tab.locator(".rename-input")).to_have_count(0, timeout=WAIT_MS)
        # A commit would have been handled before the cancel that removed the field.
        expect(row.locator(".chat-title")).to_have_text(before)

    def test_scrolling_the_sidebar_loads_further_pages_without_repeats(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        for _ in range(45):
            create_chat(tab)
        reader = open_tab(browser, app_server)
        items = reader.locator("#chat-list .chat-item")
        expect(items.first).to_be_visible(timeout=WAIT_MS)
        # Scroll to the end on every poll until a further page has arrived.
        reader.wait_for_function(
            """() => {
                const list = document.querySelector('#chat-list');
                list.parentElement.scrollBy(0, 10000);
                return list.querySelectorAll('.chat-item').length > 40;
            }""",
            polling=400,
            timeout=WAIT_MS,
        )
        ids = items.evaluate_all("els => els.map(e => e.dataset.chatId)")
        assert len(ids) == len(set(ids))
