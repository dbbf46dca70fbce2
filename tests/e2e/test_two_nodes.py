"""Two app nodes on different loopback addresses (127.0.0.2 and 127.0.0.3), each with its own
empty data folder, sharing only PostgreSQL and Redis (issue 26, item 2), and one person's tabs
on both:

* the sidebar is live on both, and a reply sent on node A streams into node B's tab;
* messages sent from both nodes' tabs to one chat queue in the order they were enqueued:
  the model answers them in that order and both tabs show the same transcript;
* the chat open in node B's tab, deleted from node A, leaves B's tab with the deletion notice,
  and the undo on node A brings it back to B's sidebar;
* signing out on node A signs the same sign-in's tab on node B out live, without a reload;
* when node A is killed mid-reply (SIGKILL: nothing of it runs) node B's tab shows the reply
  interrupted and Retry answers it from node B.

(Two nodes starting at once on an empty database: tests/storage/test_nodes_start_together.py.)
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.titles import TITLE_PROMPT
from chatsapp.auth.identity import SESSION_COOKIE
from tests.e2e.helpers import DESKTOP, chat_item, create_chat, open_chat_tab, open_tab, send
from tests.support.app_server import AppServer, model_env, start_app, start_redis
from tests.support.deadlines import WAIT_MS, WAIT_S
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_replies import Reply, held, text

USER = "nadia"
PROMPT = "Tell me about it"  # stopwords only: the offline assistant's fixed reply
REPLY_START = "I'm the offline assistant"
SLOW_CHUNK_S = "0.25"  # the offline reply (~90 words) takes ~20 s: a kill lands mid-stream

Nodes = tuple[AppServer, AppServer]
NODE_HOSTS = {"a": "127.0.0.2", "b": "127.0.0.3"}  # as two machines would be
DELETED_NOTICE = "This chat was deleted in another tab."
MESSAGE_IDS = "els => els.map(e => e.dataset.messageId)"


@contextmanager
def two_nodes(tmp_path: Path, postgres_url: str, env: dict[str, str]) -> Iterator[Nodes]:
    """Node A and node B: separate, empty data folders; one database, one Redis."""
    redis = start_redis(tmp_path)
    env = {"CHATS_STORAGE": postgres_url, "REFLEX_REDIS_URL": redis.url, **env}
    started: list[AppServer] = []
    try:
        for name, host in NODE_HOSTS.items():
            data_dir = tmp_path / f"node-{name}"
            data_dir.mkdir()
            log = tmp_path / f"node-{name}.log"
            started.append(start_app(data_dir, log, env=env, host=host))
        assert [urlsplit(server.url).hostname for server in started] == list(NODE_HOSTS.values())
        yield started[0], started[1]
    finally:
        for server in started:
            server.stop()
        redis.stop()
    for server in started:  # nothing a second machine would need was kept on disk
        assert list(server.data_dir.rglob("*")) == []


@pytest.fixture
def nodes(tmp_path: Path, postgres_url: str) -> Iterator[Nodes]:
    """The two nodes answered by the offline assistant, slowed down."""
    with two_nodes(tmp_path, postgres_url, {"CHATS_OFFLINE_CHUNK_DELAY_S": SLOW_CHUNK_S}) as both:
        yield both


# Sent in this order, from these nodes' tabs: the first is held mid-reply by the model.
QUEUED = (
    ("a", "First, from node A"),
    ("b", "Second, from node B"),
    ("a", "Third, from node A"),
    ("b", "Fourth, from node B"),
)
# A model the story holds mid-reply, so later sends surely queue behind it on a busy machine.
FIRST_ANSWER = ("The first answer, ", "held while the others queue. ")
FIRST_END = "And its end."
TITLE_REQUEST = TITLE_PROMPT.partition("{")[0]  # how a title request to the model begins


def said_last(body: dict[str, Any]) -> str:
    """The text of the last message a chat-completions request sends the model."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content") or ""
    return content if isinstance(content, str) else ""


def answered(model: FakeOpenAI) -> list[str]:
    """What the model was asked to answer, in the order it was asked (titles left out)."""
    asked = [said_last(r.body) for r in model.requests if r.path.endswith("/chat/completions")]
    return [text for text in asked if not text.startswith(TITLE_REQUEST)]


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Lets the held first answer go on; set after the story too, so no model thread waits."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def model_nodes(
    tmp_path: Path, postgres_url: str, release: threading.Event
) -> Iterator[tuple[AppServer, AppServer, FakeOpenAI]]:
    """The two nodes answered by one fake model: the first message held, the others at once
    (``Answer to: <message>``), a title request with a title."""

    def respond(body: dict[str, Any]) -> Reply:
        said = said_last(body)
        if said.startswith(TITLE_REQUEST):
            return text("Queued from two nodes")
        if said == QUEUED[0][1]:
            return held(FIRST_ANSWER, release, [FIRST_END])
        return text(f"Answer to: {said}")

    with FakeOpenAI() as model:
        model.responder = respond
        with two_nodes(tmp_path, postgres_url, model_env(model.base_url)) as (a, b):
            yield a, b, model


def signed_in_on_both(browser: Browser, token: str, *servers: AppServer) -> BrowserContext:
    """A browser context holding one sign-in's session cookie for each server's address."""
    context = browser.new_context(**DESKTOP)
    context.add_cookies(
        [
            {
                "name": SESSION_COOKIE,
                "value": token,
                "url": server.url,
                "httpOnly": True,
                "sameSite": "Strict",
            }
            for server in servers
        ]
    )
    return context


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


def test_messages_sent_from_both_nodes_are_answered_in_the_order_they_were_enqueued(
    browser: Browser,
    model_nodes: tuple[AppServer, AppServer, FakeOpenAI],
    release: threading.Event,
) -> None:
    a, b, model = model_nodes
    tab_a = open_tab(browser, a, user=USER)
    chat_id = create_chat(tab_a)
    tab_b = open_chat_tab(browser, b, chat_id, USER)
    tabs = {"a": tab_a, "b": tab_b}
    for count, (node, message) in enumerate(QUEUED, start=1):
        send(tabs[node], message)
        # Enqueued (stored, with its reply's placeholder) before the next one is sent: both
        # tabs show it, the first one's reply streaming and held there.
        for tab in tabs.values():
            expect(tab.locator(".message-user .message-text")).to_have_count(count)
            expect(tab.locator(".message-user .message-text").last).to_have_text(message)
            expect(tab.locator("#streaming-reply")).to_contain_text(FIRST_ANSWER[0])
    for tab in tabs.values():
        expect(tab.locator("#queued-indicator")).to_contain_text(f"{len(QUEUED) - 1} queued")

    release.set()
    sent = [message for _node, message in QUEUED]
    replies: list[str | re.Pattern[str]] = [re.compile(re.escape(FIRST_END))]
    replies += [f"Answer to: {message}" for message in sent[1:]]
    for tab in tabs.values():
        expect(tab.locator(".message-assistant .message-text")).to_have_text(replies)
        expect(tab.locator(".message-user .message-text")).to_have_text(sent)
        expect(tab.locator("#queued-indicator")).to_have_count(0)
    assert answered(model) == sent  # the model was asked in the order they were enqueued
    shown = [tab.locator(".message").evaluate_all(MESSAGE_IDS) for tab in tabs.values()]
    assert shown[0] == shown[1]  # one transcript, message for message


def test_the_chat_open_on_node_b_deleted_on_node_a_leaves_with_a_notice_and_undo_restores_it(
    browser: Browser, nodes: Nodes
) -> None:
    a, b = nodes
    tab_a = open_tab(browser, a, user=USER)
    keep = create_chat(tab_a)
    doomed = create_chat(tab_a)
    tab_b = open_chat_tab(browser, b, doomed, USER)
    chat_item(tab_a, keep).click()  # node A's tab moves on to the chat it keeps
    expect(tab_a.locator("#open-chat-id")).to_have_text(keep)

    chat_item(tab_a, doomed).locator(".chat-menu").click()
    tab_a.locator(".delete-chat").click()
    expect(tab_b.get_by_text(DELETED_NOTICE)).to_be_visible()
    tab_b.wait_for_url(re.compile(rf"/chat/{keep}$"), timeout=WAIT_MS, wait_until="commit")
    expect(chat_item(tab_b, doomed)).to_have_count(0)

    # Offered for UNDO_SECONDS (8 s) after the delete; the steps since take well under one
    # second, even on a loaded machine.
    tab_a.locator("#undo-delete").click()
    expect(chat_item(tab_b, doomed)).to_be_visible()  # back in node B's sidebar
    chat_item(tab_b, doomed).click()
    expect(tab_b.locator("#open-chat-id")).to_have_text(doomed)
    expect(tab_b.locator("#missing-chat")).to_have_count(0)


def test_signing_out_on_node_a_signs_the_tab_on_node_b_out_live(
    browser: Browser, nodes: Nodes
) -> None:
    a, b = nodes
    # One browser with one sign-in, as behind a load balancer where both nodes share the
    # address (here each node has its own, so the cookie is set for both).
    browser_of_nadia = signed_in_on_both(browser, a.session_token(USER), a, b)
    tab_a, tab_b = browser_of_nadia.new_page(), browser_of_nadia.new_page()
    for tab, node in ((tab_a, a), (tab_b, b)):
        tab.goto(node.url)
        expect(tab.locator("#account-name")).to_have_text(USER)
    tab_b.evaluate("window.__notReloaded = true")  # gone if the page loads again

    tab_a.locator("#sign-out").click()
    expect(tab_b.locator("#signed-out-notice")).to_be_visible()
    expect(tab_b.locator("#sidebar")).to_have_count(0)
    assert tab_b.evaluate("window.__notReloaded === true")  # signed out live, in place
