"""Regenerate the README screenshots under docs/ from a real running app.

Usage: .venv/bin/python scripts/screenshots.py   (after ./scripts/test has set things up)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.app_server import start_app  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.e2e.test_live_sidebar import create_chat  # noqa: E402

DOCS = ROOT / "docs"
CONVERSATION = [
    "remember that my sister is called Ana and she lives in Lisbon",
    "remember that I prefer green tea in the afternoon",
    "what did I say about Lisbon?",
]


def _send(page: Page, text: str) -> None:
    replies = page.locator(".message-assistant").count()
    page.locator("#composer").fill(text)
    page.locator("#composer").press("Enter")
    expect(page.locator(".message-assistant")).to_have_count(replies + 1, timeout=30_000)
    expect(page.locator(".pending-reply")).to_have_count(0, timeout=30_000)
    expect(page.locator("#streaming-reply")).to_have_count(0, timeout=30_000)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = start_app(Path(tmp) / "data", Path(tmp) / "app.log")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
                page.goto(server.url)
                expect(page.locator("#sidebar")).to_be_visible(timeout=60_000)
                page.screenshot(path=DOCS / "empty-state.png")
                create_chat(page)
                _send(page, "Plan a weekend in Porto")
                create_chat(page)
                for text in CONVERSATION:
                    _send(page, text)
                page.screenshot(path=DOCS / "chat.png")
                page.locator("#toggle-memory").click()
                expect(page.locator("#memory-panel")).to_be_visible()
                page.screenshot(path=DOCS / "memory.png")
                page.locator("#toggle-memory").click()
                page.locator("#toggle-message-search").click()
                page.locator("#message-search").fill("Lisbon")
                expect(page.locator(".message-hit").first).to_be_visible(timeout=30_000)
                page.screenshot(path=DOCS / "search.png")
                dark = browser.new_context(
                    viewport={"width": 1280, "height": 800}, color_scheme="dark"
                ).new_page()
                dark.goto(page.url.split("?")[0])
                expect(dark.locator(".message-assistant").first).to_be_visible(timeout=30_000)
                dark.screenshot(path=DOCS / "chat-dark.png")
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
