"""Regenerate the README screenshots (docs/screenshots/) from a real running app.

The app answers through a scripted local OpenAI-compatible server
(``tests/support/fake_openai.py``), so every run shows the same conversation — a code block and
math — and the header names the model ``scripted-demo``. Nothing leaves 127.0.0.1.

Usage: .venv/bin/python scripts/screenshots.py   (after ./scripts/test has set things up)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.helpers import (  # noqa: E402
    DESKTOP,
    PHONE,
    create_chat,
    open_drawer,
    send,
    wait_for_reply_end,
)
from tests.support.app_server import CHROMIUM, CHROMIUM_ARGS, AppServer, model_env, start_app  # noqa: E402  # noqa: E402
from tests.support.deadlines import WAIT_MS  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.fake_replies import Reply, text  # noqa: E402

SHOTS = ROOT / "docs" / "screenshots"
MODEL = "scripted-demo"

SQUARES = (
    "There is a closed form: $\\sum_{k=1}^{n} k^2 = \\frac{n(n+1)(2n+1)}{6}$.\n\n"
    "```python\n"
    "def sum_of_squares(n: int) -> int:\n"
    '    """1² + 2² + … + n², in constant time."""\n'
    "    return n * (n + 1) * (2 * n + 1) // 6\n"
    "```\n\n"
    "Check: `sum_of_squares(10) == 385`."
)
CUBES = (
    "The square of the triangular number:\n\n"
    "$$\n\\sum_{k=1}^{n} k^3 = \\left(\\frac{n(n+1)}{2}\\right)^2\n$$\n\n"
    "so `sum_of_cubes(n) == (n * (n + 1) // 2) ** 2`."
)
# (what the person writes, what the scripted model answers, the chat's title)
EARLIER_CHATS = [
    (
        "Plan a weekend in Porto",
        "Saturday: Ribeira and a boat up the Douro. Sunday: Serralves, then the bookshop.",
        "Weekend in Porto",
    ),
    (
        "How often should I feed a sourdough starter?",
        "Once a day at room temperature, once a week if it lives in the fridge.",
        "Feeding a sourdough starter",
    ),
]
CONVERSATION = [
    ("Is there a closed form for the sum of the first n squares? Python, please.", SQUARES),
    ("And for cubes?", CUBES),
]
REPLIES = {message: reply for message, reply, _title in EARLIER_CHATS} | dict(CONVERSATION)
TITLES = {message: title for message, _reply, title in EARLIER_CHATS} | {
    CONVERSATION[0][0]: "Sums of squares and cubes"
}


def _answer(body: dict[str, Any]) -> Reply:
    """The scripted model: a title for a title prompt, else the reply to the last message."""
    last = next(str(m["content"]) for m in reversed(body["messages"]) if m["role"] == "user")
    if last.startswith("Write a short title"):
        return text(next((t for q, t in TITLES.items() if q in last), "A chat"))
    return text(*_chunks(next((a for q, a in REPLIES.items() if q in last), "…")))


def _chunks(reply: str, size: int = 12) -> list[str]:
    return [reply[i : i + size] for i in range(0, len(reply), size)]


def _exchange(page: Page, message: str) -> None:
    """Send ``message`` and wait for its whole reply (a lost message fails here, not later)."""
    replies = page.locator(".message-assistant")
    before = replies.count()
    send(page, message)
    expect(replies).to_have_count(before + 1, timeout=WAIT_MS)
    wait_for_reply_end(page)
    expect(page.locator("#stop")).to_have_count(0, timeout=WAIT_MS)
    ending = REPLIES[message][-12:].strip("`.$ \n")
    expect(replies.last).to_contain_text(ending, timeout=WAIT_MS)


def _wait_until_rendered(page: Page) -> None:
    """Math typeset, code highlighted, and the web fonts loaded."""
    expect(page.locator(".message-assistant .katex").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".message-assistant pre span.token").first).to_be_visible(timeout=WAIT_MS)
    page.evaluate("document.fonts.ready.then(() => true)")


def _new_chat(page: Page) -> None:
    """A new chat, once its empty transcript shows (the last one's replies would be counted)."""
    create_chat(page)
    expect(page.locator(".message-assistant")).to_have_count(0, timeout=WAIT_MS)


def _seed(page: Page) -> str:
    """Two earlier chats and the conversation the shots show; returns its URL."""
    for message, _reply, _title in EARLIER_CHATS:
        _new_chat(page)
        _exchange(page, message)
    _new_chat(page)
    for message, _reply in CONVERSATION:
        _exchange(page, message)
    page.locator("#toggle-memory").click()
    page.locator("#memory-append").fill("My sister Ana lives in Lisbon")
    page.locator("#memory-append").press("Enter")
    expect(page.locator(".memory-content")).to_contain_text("Lisbon", timeout=WAIT_MS)
    page.locator("#toggle-memory").click()
    return page.url.split("?")[0]


def _scroll_transcript(page: Page, *, to_end: bool) -> None:
    page.locator("#transcript").evaluate(
        "(el, toEnd) => el.scrollTo(0, toEnd ? el.scrollHeight : 0)", to_end
    )


def _open(browser: Browser, server: AppServer, url: str, **device: Any) -> Page:
    page = server.signed_in_context(browser, **device).new_page()
    page.goto(url)
    _wait_until_rendered(page)
    return page


def take(browser: Browser, server: AppServer) -> None:
    desktop = server.signed_in_context(browser, **DESKTOP).new_page()
    desktop.goto(server.url)
    expect(desktop.locator("#sidebar")).to_be_visible(timeout=60_000)
    chat_url = _seed(desktop)
    _wait_until_rendered(desktop)
    _scroll_transcript(desktop, to_end=True)
    desktop.screenshot(path=SHOTS / "desktop.png")

    desktop.locator("#toggle-memory").click()
    expect(desktop.locator("#memory-panel")).to_contain_text("Lisbon", timeout=WAIT_MS)
    desktop.screenshot(path=SHOTS / "memory.png")
    desktop.locator("#toggle-memory").click()
    desktop.locator("#toggle-message-search").click()
    desktop.locator("#message-search").fill("sourdough")
    expect(desktop.locator(".message-hit").first).to_be_visible(timeout=WAIT_MS)
    desktop.screenshot(path=SHOTS / "search.png")

    dark = _open(browser, server, chat_url, **DESKTOP, color_scheme="dark")
    dark.wait_for_function("document.documentElement.classList.contains('dark')")
    _scroll_transcript(dark, to_end=True)
    dark.screenshot(path=SHOTS / "dark.png")

    phone = _open(browser, server, chat_url, **PHONE)
    _scroll_transcript(phone, to_end=False)
    phone.screenshot(path=SHOTS / "phone.png")
    open_drawer(phone)
    phone.screenshot(path=SHOTS / "phone-drawer.png")
    phone.goto(server.url + "/settings")
    expect(phone.locator("#export-all")).to_be_visible(timeout=WAIT_MS)
    phone.screenshot(path=SHOTS / "phone-settings.png")


def main() -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as model:
        model.models = [MODEL]
        model.responder = _answer
        env = model_env(model.base_url) | {"CHATS_MODEL": MODEL}
        server = start_app(Path(tmp) / "data", Path(tmp) / "app.log", env=env)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                take(browser, server)
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
