"""Pins and temporary chats in the browser (issue 29, item 2).

A pin shows in the person's other tab live; a temporary chat is marked, in no list and no
search, survives a reload, and is removed once its last window has closed and the grace (set
short here, ``CHATS_TEMPORARY_CHAT_GRACE_S``) has passed.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.helpers import chat_item, create_chat, open_tab, send, wait_for_reply_end
from tests.support.app_server import AppServer, start_app
from tests.support.deadlines import WAIT_MS, WAIT_S

GRACE_S = "8"
WORD = "zanzibarquokka"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("pins")
    env = {"CHATS_OFFLINE_CHUNK_DELAY_S": "0", "CHATS_TEMPORARY_CHAT_GRACE_S": GRACE_S}
    app = start_app(base / "data", base / "app.log", env=env, mode="prod")
    yield app
    app.stop()


def pinned_item(page, chat_id: str):
    return page.locator(f'#pinned-chats .chat-item[data-chat-id="{chat_id}"]')


def test_a_pin_shows_in_the_other_tab_live_and_unpinning_there_shows_here(
    server: AppServer, browser: Browser
):
    tab_a = open_tab(browser, server)
    tab_b = open_tab(browser, server)
    chat_id = create_chat(tab_a)
    expect(chat_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)

    chat_item(tab_a, chat_id).locator(".chat-menu").click()
    tab_a.locator(".pin-chat").click()
    expect(pinned_item(tab_b, chat_id)).to_be_visible(timeout=WAIT_MS)
    expect(chat_item(tab_b, chat_id)).to_have_count(1)  # in the group only, not twice

    pinned_item(tab_b, chat_id).locator(".chat-menu").click()
    tab_b.locator(".unpin-chat").click()
    expect(tab_a.locator("#pinned-chats")).to_have_count(0, timeout=WAIT_MS)
    expect(chat_item(tab_a, chat_id)).to_be_visible()


def chat_row_state(server: AppServer, chat_id: str) -> tuple[int | None, int | None] | None:
    """``(deleted_at, purged_at)`` of the chat's row, read-only (no sweep runs here)."""
    path = server.data_dir / server.user_id("alice") / "directory.sqlite"
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = connection.execute(
            "SELECT deleted_at, purged_at FROM chats WHERE id = ?", (chat_id,)
        ).fetchone()
    finally:
        connection.close()
    return None if row is None else (row[0], row[1])


def test_a_temporary_chat_is_marked_unlisted_unsearched_kept_on_reload_and_gone_after_close(
    server: AppServer, browser: Browser
):
    tab_a = open_tab(browser, server)
    ordinary = create_chat(tab_a)
    send(tab_a, f"the {WORD} is here")
    wait_for_reply_end(tab_a)

    tab_b = open_tab(browser, server)
    temporary = create_chat(tab_b, "#new-temporary-chat")
    expect(tab_b.locator("#temporary-banner")).to_be_visible(timeout=WAIT_MS)
    expect(tab_a.locator("#temporary-banner")).to_have_count(0)
    send(tab_b, f"a secret {WORD}")
    wait_for_reply_end(tab_b)
    for tab in (tab_a, tab_b):
        expect(chat_item(tab, ordinary)).to_be_visible(timeout=WAIT_MS)
        expect(chat_item(tab, temporary)).to_have_count(0)

    tab_a.locator("#toggle-message-search").click()
    tab_a.locator("#message-search").fill(WORD)
    expect(tab_a.locator(f'.message-hit[href*="/chat/{ordinary}?"]').first).to_be_visible(
        timeout=WAIT_MS
    )
    expect(tab_a.locator(f'.message-hit[href*="/chat/{temporary}?"]')).to_have_count(0)

    tab_b.reload()
    expect(tab_b.locator("#open-chat-id")).to_have_text(temporary, timeout=WAIT_MS)
    expect(tab_b.locator("#temporary-banner")).to_be_visible(timeout=WAIT_MS)
    expect(tab_b.locator(".message-user")).to_contain_text(WORD, timeout=WAIT_MS)
    assert chat_row_state(server, temporary) == (None, None)

    tab_b.context.close()  # its last window
    deadline = time.monotonic() + WAIT_S  # a hang guard: it goes after the grace
    while (chat_row_state(server, temporary) or (None, None))[1] is None:
        assert time.monotonic() < deadline, "the temporary chat outlived its window"
        tab_a.wait_for_timeout(100)
    assert chat_row_state(server, ordinary) == (None, None)
