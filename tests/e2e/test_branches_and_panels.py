"""User stories: each tab on its own branch, title search, the memory panel, lazy chat files."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import (
    chat_item,
    chat_with_one_reply,
    create_chat,
    open_chat_tab,
    open_tab,
    rename,
    reply,
    send,
    wait_for_reply_end,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS


class TestEachTabOnItsOwnBranch:
    def test_moving_between_branches_and_sending_moves_only_that_tab(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a, chat_id = chat_with_one_reply(browser, app_server, "Name a river")
        reply(tab_a).locator(".regenerate").click()
        expect(reply(tab_a).locator(".branch-position")).to_have_text("2/2", timeout=WAIT_MS)
        wait_for_reply_end(tab_a)
        tab_b = open_chat_tab(browser, app_server, chat_id)
        expect(reply(tab_b).locator(".branch-position")).to_have_text("2/2")

        reply(tab_a).locator(".branch-prev").click()
        expect(reply(tab_a).locator(".branch-position")).to_have_text("1/2", timeout=WAIT_MS)
        send(tab_a, "And another river on this branch")  # continues the branch A shows

        # A follows the reply in its own branch...
        expect(tab_a.locator(".message-user")).to_have_count(2, timeout=WAIT_MS)
        expect(tab_a.locator(".message-assistant").first.locator(".branch-position")).to_have_text(
            "1/2"
        )
        wait_for_reply_end(tab_a)
        expect(tab_a.locator(".message-assistant")).to_have_count(2)
        # ...and B, which never left branch 2, stays there with the hint.
        expect(tab_b.locator("#other-branch-hint")).to_be_visible(timeout=WAIT_MS)
        expect(tab_b.locator(".message-user")).to_have_count(1)
        expect(reply(tab_b).locator(".branch-position")).to_have_text("2/2")

        tab_b.locator("#other-branch-hint").click()
        expect(tab_b.locator(".message-user")).to_have_count(2, timeout=WAIT_MS)
        expect(tab_b.locator(".message-user .message-text").last).to_have_text(
            "And another river on this branch"
        )

    def test_the_markdown_export_names_the_branch_this_tab_shows(
        self, app_server: AppServer, browser: Browser
    ):
        tab, _chat_id = chat_with_one_reply(browser, app_server, "Pick a colour")
        first_id = reply(tab).get_attribute("data-message-id")
        reply(tab).locator(".regenerate").click()
        expect(reply(tab).locator(".branch-position")).to_have_text("2/2", timeout=WAIT_MS)
        wait_for_reply_end(tab)
        reply(tab).locator(".branch-prev").click()
        expect(reply(tab).locator(".branch-position")).to_have_text("1/2", timeout=WAIT_MS)

        tab.locator("#chat-header-menu").click()
        with tab.expect_download(timeout=WAIT_MS) as download:
            tab.locator("#export-chat-markdown").click()
        assert download.value.url.endswith(f".md?leaf={first_id}")


class TestTitleSearch:
    def test_the_sidebar_search_finds_a_chat_by_a_word_of_its_title(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server, user="tessa")
        wanted = create_chat(tab)
        rename(tab, wanted, "Quince harvest rota")
        other = create_chat(tab)
        rename(tab, other, "Garden shed repairs")

        tab.locator("#title-search").fill("quince")
        results = tab.locator("#chat-list .chat-item")
        expect(results).to_have_count(1, timeout=WAIT_MS)
        expect(results).to_have_attribute("data-chat-id", wanted)

        tab.locator("#title-search").fill("")
        expect(chat_item(tab, wanted)).to_be_visible(timeout=WAIT_MS)
        expect(chat_item(tab, other)).to_be_visible()


class TestMemoryPanel:
    def test_adding_editing_and_deleting_a_memory_shows_in_another_tab(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server, user="mira")
        tab_b = open_tab(browser, app_server, user="mira")
        for tab in (tab_a, tab_b):
            tab.locator("#toggle-memory").click()
            expect(tab.locator("#memory-panel")).to_be_visible()
        memory_in_b = tab_b.locator("#memory-panel .memory-content")

        tab_a.locator("#memory-append").fill("Drinks oolong tea")
        tab_a.locator("#memory-append").press("Enter")
        expect(memory_in_b).to_contain_text("Drinks oolong tea", timeout=WAIT_MS)

        edit(tab_a, "- Drinks jasmine tea\n")
        expect(memory_in_b).to_contain_text("Drinks jasmine tea", timeout=WAIT_MS)
        expect(memory_in_b).not_to_contain_text("oolong")

        edit(tab_a, "")  # the panel deletes a memory by editing it away
        expect(memory_in_b).to_contain_text("Nothing remembered yet.", timeout=WAIT_MS)
        expect(memory_in_b).not_to_contain_text("jasmine")


def edit(tab: Page, content: str) -> None:
    tab.locator("#memory-panel .memory-edit").click()
    draft = tab.locator("#memory-panel textarea")
    draft.fill(content)
    tab.locator("#memory-panel .memory-save").click()
    expect(draft).to_have_count(0, timeout=WAIT_MS)


class TestChatFiles:
    def test_opening_a_new_chat_creates_no_file_until_its_first_message(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server)
        chat_id = create_chat(tab)
        # Everything the page reads on opening has arrived: the header's agent is shown.
        expect(tab.locator("#agent-label")).to_contain_text(
            re.compile(r"\S v[1-9]"), timeout=WAIT_MS
        )
        assert files_of(app_server.data_dir, chat_id) == []

        send(tab, "Now there is something to keep")
        wait_for_reply_end(tab)
        assert files_of(app_server.data_dir, chat_id) != [], sorted(app_server.data_dir.rglob("*"))


def files_of(data_dir: Path, chat_id: str) -> list[Path]:
    return sorted(data_dir.rglob(f"{chat_id}.*"))
