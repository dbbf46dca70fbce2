"""Production mode, two workers, Redis: tabs served by different workers stay in sync."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.app_server import AppServer, start_app, start_redis
from tests.e2e.test_live_sidebar import TIMEOUT_MS, chat_item, create_chat, open_tab

MAX_TABS = 12


@pytest.fixture(scope="module")
def prod_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("prod")
    redis = start_redis(base)
    server = start_app(
        base / "data",
        base / "app.log",
        mode="prod",
        env={
            "REFLEX_REDIS_URL": redis.url,
            "GRANIAN_WORKERS": "2",
            "CHATS_EXPOSE_WORKER_ID": "1",
        },
    )
    yield server
    server.stop()
    redis.stop()


def worker_of(page: Page) -> str:
    locator = page.locator("#worker-id")
    expect(locator).not_to_have_text("", timeout=TIMEOUT_MS)
    return locator.inner_text()


def test_a_chat_created_on_one_worker_appears_in_a_tab_served_by_the_other(
    prod_server: AppServer, browser: Browser
):
    tabs = [open_tab(browser, prod_server)]
    first_worker = worker_of(tabs[0])
    other: Page | None = None
    while other is None and len(tabs) < MAX_TABS:
        tab = open_tab(browser, prod_server)
        tabs.append(tab)
        if worker_of(tab) != first_worker:
            other = tab
    assert other is not None, f"all {len(tabs)} tabs landed on worker {first_worker}"

    chat_id = create_chat(tabs[0])
    expect(chat_item(other, chat_id)).to_be_visible(timeout=TIMEOUT_MS)
