"""Two app nodes on different loopback addresses, each with its own empty data folder, sharing
only PostgreSQL and Redis (issue 26, item 2): one person's tabs on both see the same sidebar
live, a reply sent on node A streams into node B's tab, and when node A is killed mid-reply
(SIGKILL: nothing of it runs) node B's tab shows the reply interrupted and Retry answers it
from node B. (Two nodes starting at once on an empty database:
tests/storage/test_nodes_start_together.py.)
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect

from backend.runtime.failures import INTERRUPTED_ERROR
from tests.e2e.helpers import chat_item, create_chat, open_chat_tab, open_tab, send
from tests.support.app_server import AppServer, start_app, start_redis
from tests.support.deadlines import WAIT_MS, WAIT_S

USER = "nadia"
PROMPT = "Tell me about it"  # stopwords only: the offline assistant's fixed reply
REPLY_START = "I'm the offline assistant"
SLOW_CHUNK_S = "0.25"  # the offline reply (~90 words) takes ~20 s: a kill lands mid-stream


@pytest.fixture
def nodes(tmp_path: Path, postgres_url: str) -> Iterator[tuple[AppServer, AppServer]]:
    """Node A and node B: separate, empty data folders; one database, one Redis."""
    redis = start_redis(tmp_path)
    env = {
        "CHATS_STORAGE": postgres_url,
        "REFLEX_REDIS_URL": redis.url,
        "CHATS_OFFLINE_CHUNK_DELAY_S": SLOW_CHUNK_S,
    }
    started: list[AppServer] = []
    try:
        for name in ("a", "b"):
            data_dir = tmp_path / f"node-{name}"
            data_dir.mkdir()
            started.append(start_app(data_dir, tmp_path / f"node-{name}.log", env=env))
        # Each node on a loopback address of its own (tests/support/app_server.py picks them).
        assert len({urlsplit(server.url).hostname for server in started}) == 2
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()
        redis.stop()
    for server in started:  # nothing a second machine would need was kept on disk
        assert list(server.data_dir.rglob("*")) == []


def streaming_in(page: Page) -> None:
    expect(page.locator("#streaming-reply")).to_contain_text(REPLY_START, timeout=WAIT_MS)


def test_both_nodes_show_one_sidebar_live_and_a_reply_sent_on_one_streams_on_the_other(
    browser: Browser, nodes: tuple[AppServer, AppServer]
) -> None:
    a, b = nodes
    tab_a = open_tab(browser, a, user=USER)
    tab_b = open_tab(browser, b, user=USER)
    chat_id = create_chat(tab_a)
    expect(chat_item(tab_b, chat_id)).to_be_visible()  # node B's sidebar, live

    watching = open_chat_tab(browser, b, chat_id, USER)
    send(tab_a, PROMPT)
    streaming_in(watching)  # written on node A, streaming on node B
    expect(watching.locator("#streaming-reply")).to_have_count(0, timeout=WAIT_MS)
    on_b = watching.locator(".message-assistant .message-text").last
    expect(on_b).to_contain_text(REPLY_START)
    shown_a = tab_a.locator(".message-assistant .message-text").last
    expect(shown_a).to_have_text(on_b.inner_text())


def test_node_a_killed_mid_reply_leaves_it_interrupted_on_node_b_and_retry_answers_there(
    browser: Browser, nodes: tuple[AppServer, AppServer]
) -> None:
    a, b = nodes
    tab_a = open_tab(browser, a, user=USER)
    chat_id = create_chat(tab_a)
    watching = open_chat_tab(browser, b, chat_id, USER)
    send(tab_a, PROMPT)
    streaming_in(watching)
    os.killpg(a.process.pid, signal.SIGKILL)
    a.process.wait(timeout=WAIT_S)

    # Node A's lease expires in Redis; node B recovers the orphan and marks it interrupted.
    interrupted = watching.locator(".message-assistant").last
    expect(interrupted.locator(".retry")).to_be_visible(timeout=WAIT_MS)
    expect(interrupted).to_contain_text(INTERRUPTED_ERROR)
    interrupted.locator(".retry").click()
    streaming_in(watching)  # answered by node B, the only one left
    expect(watching.locator("#streaming-reply")).to_have_count(0, timeout=WAIT_MS)
    answered = watching.locator(".message-assistant").last
    expect(answered.locator(".message-text")).to_contain_text(REPLY_START)
    expect(answered.locator(".retry")).to_have_count(0)
