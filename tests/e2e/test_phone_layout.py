"""The app at three widths: on a phone the sidebar is a drawer and the conversation is full width.

A phone (390×844, touch) opens its chat list from a menu button in the chat header; the drawer
closes on Escape, a tap beside it, a left swipe, and after a chat is picked or created. The
memory panel is a bottom sheet there. A tablet and a desktop keep the sidebar beside a wide
conversation column. Each story signs in its own person, so no other story's chats interfere.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import (
    DESKTOP,
    PHONE,
    PHONE_HEIGHT,
    PHONE_WIDTH,
    TABLET,
    chat_item,
    create_chat,
    drawer_button,
    expect_drawer_closed,
    open_as,
    open_drawer,
    send,
    wait_for_reply_end,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

# What is left of the phone's height above an on-screen keyboard.
KEYBOARD_OPEN_HEIGHT = 480

# One code line far wider than a phone, and display math.
WIDE_MESSAGE = "```python\nwidth = '" + "w" * 240 + "'\n```\n\n$$\n\\sum_{k=1}^{n} k\n$$"


def swipe_left(page: Page, y: int) -> None:
    """A real touch gesture (touchstart, moves, touchend) from x=260 to x=60 at height ``y``."""
    cdp = page.context.new_cdp_session(page)
    cdp.send(
        "Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": 260, "y": y}]}
    )
    for x in (210, 160, 110, 60):
        cdp.send(
            "Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]}
        )
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def width_of(page: Page, selector: str) -> float:
    return page.locator(selector).evaluate("el => el.getBoundingClientRect().width")


def page_scroll_width(page: Page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def expect_bottom_sheet(page: Page, selector: str) -> None:
    """Full width, resting on the bottom edge, the chat header still visible above it."""
    # Measured once it has settled: a sheet may slide in.
    page.wait_for_function(
        "selector => document.querySelector(selector).getAnimations().length === 0",
        arg=selector,
        timeout=WAIT_MS,
    )
    box = page.locator(selector).bounding_box()
    assert box is not None
    assert box["x"] == 0 and box["width"] == PHONE_WIDTH
    assert abs(box["y"] + box["height"] - PHONE_HEIGHT) <= 1, "it rests on the bottom edge"
    assert box["y"] > 0, "the chat header stays visible above it"
    assert page_scroll_width(page) <= PHONE_WIDTH


class TestPhoneDrawer:
    def test_a_phone_chats_full_width_and_switches_chats_through_the_drawer(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_as(browser, app_server, "phoebe", PHONE)
        expect(page.locator("#empty-state")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#sidebar")).to_be_hidden()

        open_drawer(page)  # the empty state's own menu button
        first = create_chat(page)
        expect_drawer_closed(page)
        send(page, "hello from my phone")
        wait_for_reply_end(page)
        expect(page.locator(".message-assistant").first).to_contain_text(
            "offline assistant", timeout=WAIT_MS
        )
        expect(page.locator("#stop")).to_have_count(0, timeout=WAIT_MS)
        assert width_of(page, "#transcript") >= 0.9 * PHONE_WIDTH
        assert width_of(page, ".composer") >= 0.9 * PHONE_WIDTH
        assert width_of(page, "#composer") >= 0.5 * PHONE_WIDTH
        # The header's controls fit (the second row scrolls sideways inside itself).
        assert page.locator(".chat-header").evaluate("el => el.scrollWidth <= el.clientWidth")
        assert page_scroll_width(page) <= page.evaluate("innerWidth") <= PHONE_WIDTH

        expect(page.locator(".chat-header button.drawer-button")).to_have_accessible_name(
            "Open the chat list"
        )
        open_drawer(page)
        second = create_chat(page)
        expect_drawer_closed(page)
        assert second != first

        open_drawer(page)
        chat_item(page, first).locator("a").click()
        expect(page.locator("#open-chat-id")).to_have_text(first, timeout=WAIT_MS)
        expect_drawer_closed(page)
        expect(page.locator(".message-user")).to_contain_text("hello from my phone")

    def test_escape_a_tap_beside_it_and_a_left_swipe_each_close_the_drawer(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_as(browser, app_server, "esme", PHONE)
        open_drawer(page)
        create_chat(page)

        open_drawer(page)
        page.keyboard.press("Escape")
        expect_drawer_closed(page)

        open_drawer(page)
        page.touchscreen.tap(PHONE_WIDTH - 20, PHONE_HEIGHT // 2)  # the backdrop, right of it
        expect_drawer_closed(page)

        open_drawer(page)
        swipe_left(page, y=PHONE_HEIGHT // 2)
        expect_drawer_closed(page)

    def test_the_composer_stays_in_view_when_an_on_screen_keyboard_shrinks_the_page(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_as(browser, app_server, "kiko", PHONE)
        open_drawer(page)
        create_chat(page)
        # The keyboard resizes the layout, not only the visual viewport.
        viewport = page.locator('meta[name="viewport"]')
        expect(viewport).to_have_count(1)
        expect(viewport).to_have_attribute(
            "content", re.compile(r"interactive-widget=resizes-content")
        )
        page.locator("#composer").focus()
        page.set_viewport_size({"width": PHONE_WIDTH, "height": KEYBOARD_OPEN_HEIGHT})
        page.wait_for_function(
            """() => {
                const box = document.getElementById('composer').getBoundingClientRect();
                return box.top >= 0 && box.bottom <= innerHeight;
            }""",
            timeout=WAIT_MS,
        )
        expect(page.locator("#send")).to_be_in_viewport()

    def test_wide_code_and_math_scroll_inside_the_message_not_the_page(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_as(browser, app_server, "wendy", PHONE)
        open_drawer(page)
        create_chat(page)
        send(page, WIDE_MESSAGE)
        wait_for_reply_end(page)
        code = page.locator(".message-user pre").first
        expect(code).to_contain_text("wwww", timeout=WAIT_MS)
        # Found afresh on each poll: the highlighter re-renders the block once its language loads.
        page.wait_for_function(
            """() => {
                const pre = document.querySelector('.message-user pre');
                return pre && pre.scrollWidth > pre.clientWidth;
            }""",
            timeout=WAIT_MS,
        )
        assert page_scroll_width(page) <= page.evaluate("innerWidth") <= PHONE_WIDTH

    def test_the_memory_and_session_state_panels_are_bottom_sheets_on_a_phone(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_as(browser, app_server, "mona", PHONE)
        open_drawer(page)
        create_chat(page)
        page.locator("#toggle-memory").click()
        sheet = page.locator("#memory-panel")
        expect(sheet).to_be_visible(timeout=WAIT_MS)
        expect_bottom_sheet(page, "#memory-panel")
        page.locator("#close-memory").click()
        expect(sheet).to_have_count(0, timeout=WAIT_MS)

        page.locator("#state-toggle").click()  # in the header's sideways-scrolling row
        expect(page.locator("#state-panel")).to_be_visible(timeout=WAIT_MS)
        expect_bottom_sheet(page, "#state-panel")


def open_chat_beside_the_sidebar(
    browser: Browser, server: AppServer, user: str, device: dict[str, Any]
) -> Page:
    """A new chat on a screen wide enough for the inline sidebar (and no drawer button)."""
    page = open_as(browser, server, user, device)
    expect(page.locator("#sidebar")).to_be_visible()
    expect(drawer_button(page)).to_have_count(0)
    create_chat(page)
    # The header's details wrap: the title keeps room and nothing spills past the edge.
    assert width_of(page, "#chat-title") >= 100
    assert page.locator(".chat-header").evaluate("el => el.scrollWidth <= el.clientWidth")
    return page


class TestWiderScreens:
    def test_a_tablet_keeps_a_narrower_sidebar_beside_a_wide_column(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_chat_beside_the_sidebar(browser, app_server, "tabitha", TABLET)
        sidebar = width_of(page, "#sidebar")
        assert 200 <= sidebar < 288, "narrower than on a desktop (18rem)"
        assert width_of(page, "#transcript") >= 820 - sidebar - 1
        assert page_scroll_width(page) <= 820

        # The memory panel lies over the conversation instead of squeezing it, and closes.
        page.locator("#toggle-memory").click()
        expect(page.locator("#memory-panel")).to_be_visible(timeout=WAIT_MS)
        assert width_of(page, "#transcript") >= 820 - sidebar - 1
        page.locator("#close-memory").click()
        expect(page.locator("#memory-panel")).to_have_count(0, timeout=WAIT_MS)

    def test_a_desktop_keeps_its_sidebar_and_can_still_collapse_it(
        self, app_server: AppServer, browser: Browser
    ):
        page = open_chat_beside_the_sidebar(browser, app_server, "desmond", DESKTOP)
        assert width_of(page, "#sidebar") == 288
        assert width_of(page, "#transcript") >= 1280 - 288 - 1

        page.locator("#toggle-sidebar").click()
        expect(page.locator("#sidebar")).to_be_hidden(timeout=WAIT_MS)
        assert width_of(page, "#transcript") >= 1279
        page.locator("#toggle-sidebar").click()
        expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
