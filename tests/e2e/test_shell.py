"""The app shell renders in a real browser."""

from playwright.sync_api import Page, expect

from tests.e2e.app_server import AppServer


def test_the_home_page_renders_the_sidebar_and_the_main_pane(app_server: AppServer, page: Page):
    page.goto(app_server.url)
    expect(page.locator("#sidebar")).to_be_visible(timeout=60_000)
    expect(page.locator("#main-pane")).to_be_visible()
    expect(page.locator("#new-chat")).to_be_visible()
