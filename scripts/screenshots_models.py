"""Screenshots of the model picker, the agent editor and the session-state panel (issue 12).

Usage: .venv/bin/python scripts/screenshots_models.py   (after ./scripts/test has set things up)

Starts the real app against the fake OpenAI server of the tests (it lists two models and
reports token usage), signs a user in, and writes ``docs/screenshots/picker.png``,
``agent-editor.png`` (and ``phone-agent-editor.png``) and ``session-state.png``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Browser, Page, expect, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.helpers import PHONE  # noqa: E402
from tests.support.app_server import CHROMIUM, CHROMIUM_ARGS, AppServer, model_env, start_app  # noqa: E402  # noqa: E402
from tests.support.fake_openai import FakeOpenAI  # noqa: E402
from tests.support.fake_replies import text  # noqa: E402

SHOTS = ROOT / "docs" / "screenshots"
WAIT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 800}
REPLY = (
    "Here is a plan for Saturday: start at the **Ribeira** riverside, cross the Dom Luís I"
    " bridge to the port cellars, and end with dinner in Foz."
)
INSTRUCTIONS = (
    "You are a travel planner. Answer with a short plan: a morning, an afternoon and an"
    " evening, each one line. Prefer walking routes and local food."
)


def _send(page: Page, words: str) -> None:
    replies = page.locator(".message-assistant .message-text")
    before = replies.count()
    page.locator("#composer").fill(words)
    page.locator("#composer").press("Enter")
    expect(replies).to_have_count(before + 1, timeout=WAIT_MS)
    expect(page.locator(".reply-usage").last).to_be_visible(timeout=WAIT_MS)


def _settled(page: Page) -> None:
    """Wait until the drawer's opening animation has finished (no running animations)."""
    page.wait_for_function(
        "() => document.getAnimations().every((a) => a.playState !== 'running')",
        timeout=WAIT_MS,
    )


def _agent_editor(browser: Browser, server: AppServer) -> Page:
    page = server.signed_in_context(browser, "alice", viewport=VIEWPORT).new_page()
    page.goto(server.url + "/agents")
    expect(page.locator("#agent-new")).to_be_visible(timeout=WAIT_MS)
    page.locator("#agent-new").click()
    page.locator("#agent-name").fill("Trip planner")
    page.locator("#agent-instructions").fill(INSTRUCTIONS)
    page.locator("#agent-temperature").fill("0.4")
    page.get_by_text("remember", exact=True).click()
    page.get_by_text("update_session_state", exact=True).click()
    page.locator("#agent-save").click()
    expect(page.locator(".agent-version")).to_have_count(1, timeout=WAIT_MS)
    page.locator("#agent-instructions").fill(INSTRUCTIONS + " Mention one viewpoint.")
    page.locator("#agent-save").click()
    expect(page.locator(".agent-version")).to_have_count(2, timeout=WAIT_MS)
    expect(page.locator("[data-sonner-toast]")).to_have_count(0, timeout=WAIT_MS)
    page.locator("#agent-new").scroll_into_view_if_needed()
    return page


def _phone_agent_editor(browser: Browser, server: AppServer) -> None:
    """The same agent open in the editor on a phone (its fields one under another)."""
    page = server.signed_in_context(browser, "alice", **PHONE).new_page()
    page.goto(server.url + "/agents")
    page.locator(".agent-edit").first.click()
    expect(page.locator(".agent-version")).to_have_count(2, timeout=WAIT_MS)
    page.screenshot(path=SHOTS / "phone-agent-editor.png", full_page=True)
    page.context.close()


def main() -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    usage = {"prompt_tokens": 412, "completion_tokens": 38}
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(default=text(REPLY, usage=usage)) as fake:
        fake.models = ["fake-model", "other-model"]
        server = start_app(Path(tmp) / "data", Path(tmp) / "app.log", env=model_env(fake.base_url))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                editor = _agent_editor(browser, server)
                editor.screenshot(path=SHOTS / "agent-editor.png")
                _phone_agent_editor(browser, server)

                editor.locator(".agent-new-chat").first.click()
                editor.wait_for_url("**/chat/*", timeout=WAIT_MS)
                # A page of its own: the editor's "Saved" notices would cover the composer.
                chat = editor.context.new_page()
                chat.goto(editor.url)
                editor.close()
                expect(chat.locator("#agent-label")).to_contain_text("Trip planner")
                _send(chat, "Plan a Saturday in Porto")
                _send(chat, "And if it rains?")
                chat.locator("#model-picker").select_option("default:other-model")
                expect(chat.locator("#model-picker")).to_have_attribute(
                    "data-next-model", "other-model · default", timeout=WAIT_MS
                )
                chat.screenshot(path=SHOTS / "picker.png")

                chat.locator("#state-toggle").click()
                chat.locator("#state-draft").fill(
                    '{"city": "Porto", "day": "Saturday", "rain_plan": true}'
                )
                chat.locator("#state-save").click()
                expect(chat.locator("#state-version")).to_have_text("1", timeout=WAIT_MS)
                _settled(chat)
                chat.screenshot(path=SHOTS / "session-state.png")
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
