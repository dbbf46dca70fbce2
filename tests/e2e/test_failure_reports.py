"""A failed browser story's report says what each open tab sent and heard last: whether a
click's event left the tab, and what the server answered (tests/e2e/conftest.py)."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.helpers import create_chat, send
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.tab_traffic import TRAFFIC


def test_the_report_shows_each_open_tab_with_its_events_and_the_updates_it_heard(
    page: Page, app_server: AppServer
):
    page.goto(app_server.url)
    chat_id = create_chat(page)
    send(page, "hello from the report test")
    expect(page.locator(".message-assistant")).to_have_count(1, timeout=WAIT_MS)

    report = TRAFFIC.report()

    assert f"── tab {app_server.url}/chat/{chat_id}" in report
    assert "visible: Chats New chat" in report
    sent = report.split("sent last:", 1)[1].split("latest:", 1)[0]
    assert '→ event chat_tab_state.send {"text": "hello from the report test"}' in sent
    assert "← update delta" in report and "shared_conversation_state" in report
