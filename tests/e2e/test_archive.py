"""User stories: archived chats leave the list for "Archived" in every tab, can be found and
brought back; "New chat with ▾" starts a chat with the agent picked."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.e2e.helpers import (
    archive,
    archived_item,
    create_chat,
    main_list_item,
    open_archived,
    open_tab,
    rename,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

USER = "archie"  # a person of their own: other stories' chats stay out of these lists


def pick_agent(page: Page, name: str) -> None:
    """ "New chat with ▾" an agent. The menu lists the agents when it opens: on a tab that has
    just loaded, the first open may come before the page listens, so open it again if needed."""
    item = page.locator(".new-chat-agent", has_text=name)
    for _attempt in range(5):
        page.locator("#new-chat-with").click()
        try:
            expect(item).to_be_visible(timeout=5_000)
            item.click(timeout=5_000)
            return
        except (AssertionError, PlaywrightTimeoutError):
            page.keyboard.press("Escape")
    raise AssertionError(f"no {name!r} in the New chat with menu")


class TestArchive:
    def test_a_chat_archived_in_one_tab_moves_to_archived_in_the_other(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server, user=USER)
        tab_b = open_tab(browser, app_server, user=USER)
        open_archived(tab_b)
        chat_id = create_chat(tab_a)
        expect(main_list_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)

        archive(tab_a, chat_id)
        expect(main_list_item(tab_b, chat_id)).to_have_count(0, timeout=WAIT_MS)
        expect(archived_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab_a, chat_id)).to_have_count(0, timeout=WAIT_MS)
        expect(tab_a.locator("#archived-label")).to_be_visible(timeout=WAIT_MS)  # header

    def test_the_archived_filter_finds_by_title_and_unarchive_brings_a_chat_back(
        self, app_server: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, app_server, user=USER)
        tab_b = open_tab(browser, app_server, user=USER)
        lisbon = create_chat(tab_a)
        rename(tab_a, lisbon, "Lisbon itinerary")
        budget = create_chat(tab_a)
        rename(tab_a, budget, "Budget 2027")
        archive(tab_a, lisbon)
        archive(tab_a, budget)
        open_archived(tab_a)
        expect(archived_item(tab_a, lisbon)).to_be_visible(timeout=WAIT_MS)
        expect(archived_item(tab_a, budget)).to_be_visible(timeout=WAIT_MS)

        tab_a.locator("#archived-filter").fill("lisb")
        expect(archived_item(tab_a, budget)).to_have_count(0, timeout=WAIT_MS)
        expect(archived_item(tab_a, lisbon)).to_be_visible(timeout=WAIT_MS)
        tab_a.locator("#archived-filter").fill("nothing like it")
        expect(tab_a.locator("#archived-empty")).to_be_visible(timeout=WAIT_MS)
        tab_a.locator("#archived-filter").fill("lisb")
        expect(archived_item(tab_a, lisbon)).to_be_visible(timeout=WAIT_MS)

        archived_item(tab_a, lisbon).locator(".chat-menu").click()
        tab_a.locator(".unarchive-chat").click()
        expect(archived_item(tab_a, lisbon)).to_have_count(0, timeout=WAIT_MS)
        expect(main_list_item(tab_a, lisbon)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab_b, lisbon)).to_be_visible(timeout=WAIT_MS)
        expect(main_list_item(tab_b, budget)).to_have_count(0)

    def test_message_search_still_finds_an_archived_chat_and_labels_it(
        self, app_server: AppServer, browser: Browser
    ):
        tab = open_tab(browser, app_server, user=USER)
        chat_id = create_chat(tab)
        tab.locator("#composer").fill("Notes on the quokka census")
        tab.locator("#composer").press("Enter")
        expect(tab.locator(".message-user").last).to_contain_text("quokka", timeout=WAIT_MS)
        archive(tab, chat_id)
        expect(main_list_item(tab, chat_id)).to_have_count(0, timeout=WAIT_MS)

        tab.locator("#toggle-message-search").click()
        tab.locator("#message-search").fill("quokka census")
        hit = tab.locator(f'.message-hit[href^="/chat/{chat_id}"]')
        expect(hit).to_be_visible(timeout=WAIT_MS)
        expect(hit.locator(".hit-archived")).to_have_text("archived")


class TestNewChatWithAnAgent:
    def test_new_chat_with_starts_a_chat_bound_to_the_agent_picked(
        self, app_server: AppServer, browser: Browser
    ):
        library = app_server.signed_in_context(
            browser, USER, viewport={"width": 1280, "height": 900}
        ).new_page()
        library.goto(app_server.url + "/agents")
        library.locator("#agent-new").click()
        library.locator("#agent-name").fill("Travel planner")
        library.locator("#agent-instructions").fill("Plan trips.")
        library.locator("#agent-save").click()
        expect(library.locator(".agent-name", has_text="Travel planner")).to_be_visible(
            timeout=WAIT_MS
        )

        tab = open_tab(browser, app_server, user=USER)
        pick_agent(tab, "Travel planner")
        tab.wait_for_url("**/chat/*", timeout=WAIT_MS)
        expect(tab.locator("#agent-label")).to_contain_text("Travel planner", timeout=WAIT_MS)
        chat_id = tab.url.rsplit("/", 1)[-1]
        expect(main_list_item(tab, chat_id)).to_be_visible(timeout=WAIT_MS)

        pick_agent(tab, "Default assistant")
        tab.wait_for_url(lambda url: chat_id not in url and "/chat/" in url, timeout=WAIT_MS)
        expect(tab.locator("#agent-label")).to_contain_text("Default assistant", timeout=WAIT_MS)
