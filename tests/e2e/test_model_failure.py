"""A real model server that fails: the user sees a clear error, keeps their words, retries.

Runs the shared model app (tests/e2e/conftest.py) as finn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.helpers import create_chat, open_tab, send
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_replies import http_error, text


@pytest.fixture(scope="module")
def failing_model(model_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    with model_server.replying(text("Recovered", " on", " retry.")):
        yield model_server


def test_a_failed_reply_shows_the_error_keeps_the_message_and_retry_answers_it(
    model_app: AppServer, failing_model: FakeOpenAI, browser: Browser
):
    tab = open_tab(browser, model_app, user="finn")
    create_chat(tab)
    # The picker is the one place that says which model answers (no second header badge).
    expect(tab.locator("#model-picker")).to_have_attribute(
        "data-next-model", "fake-model · default", timeout=WAIT_MS
    )
    expect(tab.locator("#model-label")).to_have_count(0)
    failing_model.script(http_error(500, "the model exploded"), asked="Summarise my week, please")

    send(tab, "Summarise my week, please")

    expect(tab.locator("#run-error")).to_be_visible(timeout=WAIT_MS)
    expect(tab.locator(".message-user .message-text")).to_have_text("Summarise my week, please")
    tab.locator(".retry").click()
    expect(tab.locator(".message-assistant .message-text").last).to_have_text(
        "Recovered on retry.", timeout=WAIT_MS
    )
    expect(tab.locator("#run-error")).to_have_count(0)
