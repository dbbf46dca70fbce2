"""While a reply streams: a message sent meanwhile queues behind it, a reload resumes it
where it was, Stop keeps what it wrote, and a tab on another branch is told of it rather
than moved to it.

The model holds each reply mid-way until the story has acted (``fake_replies.held``), so the
reply is surely still streaming however slow the machine: with the offline assistant's paced
reply (a few seconds) a loaded machine could end it first. Runs the shared model app
(tests/e2e/conftest.py) as iris.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import (
    chat_item,
    chat_with_one_reply,
    create_chat,
    open_chat_tab,
    open_tab,
    reply,
    reply_text,
    send,
    wait_for_reply_end,
    wait_for_streamed_chars,
)
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_replies import held, text

USER = "iris"


@pytest.fixture(scope="module")
def model(model_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """Replies not scripted by a story (titles, a queued message's answer) are short."""
    with model_server.replying(text("A short answer.")):
        yield model_server


@pytest.fixture
def release(model: FakeOpenAI) -> Iterator[threading.Event]:
    """Lets the held reply go on; set after the story too, so no server thread waits on."""
    event = threading.Event()
    yield event
    event.set()


def streaming_tab(browser: Browser, server: AppServer, model: FakeOpenAI, release) -> Page:
    """A tab whose chat is streaming a held reply: 'The first part of the reply, long enough
    to read. ' so far."""
    before = ["The first part of the reply, ", "long enough to read. "]
    question = "Tell me what you can do for me today"
    model.script(held(before, release, ["And the end."]), asked=question)
    tab = open_tab(browser, server, user=USER)
    create_chat(tab)
    send(tab, question)
    expect(tab.locator("#streaming-reply")).to_be_visible()
    wait_for_streamed_chars(tab, 20)
    return tab


class TestQueueing:
    def test_a_message_sent_during_a_reply_queues_and_is_answered_after_it(
        self, model_app: AppServer, model: FakeOpenAI, release: threading.Event, browser: Browser
    ):
        tab = streaming_tab(browser, model_app, model, release)
        send(tab, "And then the second thing")
        expect(tab.locator("#queued-indicator")).to_be_visible()
        release.set()
        expect(tab.locator(".message-user")).to_have_count(2)
        expect(tab.locator(".message-assistant .message-text")).to_have_count(2)
        users = tab.locator(".message-user .message-text").all_inner_texts()
        assert users == ["Tell me what you can do for me today", "And then the second thing"]
        replies = tab.locator(".message-assistant .message-text")
        expect(replies.first).to_contain_text("And the end.")
        expect(replies.last).to_have_text("A short answer.")


class TestInterruptions:
    def test_a_reload_mid_stream_resumes_the_reply_where_it_was(
        self, model_app: AppServer, model: FakeOpenAI, release: threading.Event, browser: Browser
    ):
        tab = streaming_tab(browser, model_app, model, release)
        before_reload = tab.locator("#streaming-reply").inner_text()
        tab.reload()
        expect(tab.locator("#streaming-reply")).to_be_visible()
        wait_for_streamed_chars(tab, 20)
        resumed = tab.locator("#streaming-reply").inner_text()
        assert resumed.startswith(before_reload[:20])
        release.set()
        wait_for_reply_end(tab)
        final = tab.locator(".message-assistant .message-text").inner_text()
        assert len(final) > len(before_reload)
        assert final.endswith("And the end.")

    def test_stop_keeps_the_partial_reply_marked_as_stopped(
        self, model_app: AppServer, model: FakeOpenAI, release: threading.Event, browser: Browser
    ):
        tab = streaming_tab(browser, model_app, model, release)
        tab.locator("#stop").click()
        expect(tab.locator(".status-cancelled")).to_be_visible()
        partial = tab.locator(".message-assistant .message-text").inner_text()
        assert partial.startswith("The first part of the reply")
        assert "And the end." not in partial
        expect(tab.locator("#stop")).to_have_count(0)


class TestEachTabOnItsOwnBranch:
    def test_a_reply_streaming_on_another_branch_is_offered_to_a_tab_not_jumped_to(
        self, model_app: AppServer, model: FakeOpenAI, release: threading.Event, browser: Browser
    ):
        tab_a, chat_id = chat_with_one_reply(browser, model_app, "Tell me about tea", USER)
        first_reply = reply_text(tab_a)
        # The chat's title came from the model: no title request can take the held reply.
        expect(chat_item(tab_a, chat_id)).to_contain_text("A short answer")
        tab_b = open_chat_tab(browser, model_app, chat_id, USER)
        expect(reply(tab_b).locator(".message-text")).to_have_text(first_reply)

        model.script(
            held(["Another answer, ", "on a branch of its own. "], release, ["Done."]),
            asked="Tell me about tea",
        )
        reply(tab_b).locator(".regenerate").click()  # a reply streams on branch 2

        # B follows the new reply as it streams...
        expect(tab_b.locator("#streaming-reply")).to_be_visible(timeout=WAIT_MS)
        expect(reply(tab_b).locator(".branch-position")).to_have_text("2/2")
        # ...while A keeps branch 1 and is told about the reply instead of moved to it.
        expect(tab_a.locator("#other-branch-hint")).to_be_visible(timeout=WAIT_MS)
        expect(reply(tab_a).locator(".branch-position")).to_have_text("1/2", timeout=WAIT_MS)
        expect(tab_a.locator("#streaming-reply")).to_have_count(0)
        assert reply_text(tab_a) == first_reply

        release.set()
        wait_for_reply_end(tab_b)
        second_reply = reply_text(tab_b)
        expect(reply(tab_a).locator(".message-text")).to_have_text(first_reply)
        expect(tab_a.locator("#other-branch-hint")).to_be_visible()
        expect(tab_b.locator("#other-branch-hint")).to_have_count(0)

        tab_a.locator("#other-branch-hint").click()
        expect(reply(tab_a).locator(".branch-position")).to_have_text("2/2", timeout=WAIT_MS)
        expect(reply(tab_a).locator(".message-text")).to_have_text(second_reply)
        expect(tab_a.locator("#other-branch-hint")).to_have_count(0)
