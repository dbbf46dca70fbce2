"""The app shell renders in a real browser."""

from playwright.sync_api import Page, expect

from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS


def test_the_home_page_renders_the_sidebar_and_the_main_pane(app_server: AppServer, page: Page):
    page.goto(app_server.url)
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#main-pane")).to_be_visible()
    expect(page.locator("#new-chat")).to_be_visible()
