"""What a person expects of a modern chat: math, highlighted code, copy buttons, send times.

Runs the shared model app (tests/e2e/conftest.py) against a fake OpenAI-compatible server whose
replies hold math and code, as rosa.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import create_chat, send, wait_for_reply_end
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_replies import text
from tests.support.tiny_pdf import pdf_with_text

CODE = "def greet(name):\n    return f'hello {name}'"
REPLY = (
    "Euler: $e^{i\\pi}+1=0$ and on its own line:\n\n$$\n\\int_0^1 x\\,dx\n$$\n\n"
    f"```python\n{CODE}\n```\n\nThat is all."
)


USER = "rosa"


@pytest.fixture(scope="module")
def model(model_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    with model_server.replying(text(REPLY)):
        yield model_server


@pytest.fixture(scope="module")
def app(model_app: AppServer, model: FakeOpenAI) -> AppServer:
    return model_app


def open_chat(browser: Browser, app: AppServer) -> Page:
    context = app.signed_in_context(
        browser,
        USER,
        viewport={"width": 1280, "height": 800},
        permissions=["clipboard-read", "clipboard-write"],
    )
    tab = context.new_page()
    tab.goto(app.url)
    expect(tab.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    create_chat(tab)
    return tab


class TestMathAndCode:
    def test_a_reply_renders_katex_math_and_highlighted_code_and_a_script_stays_text(
        self, app: AppServer, browser: Browser
    ):
        tab = open_chat(browser, app)
        send(tab, "Show me math <script>window.__ran = true</script>")
        wait_for_reply_end(tab)
        reply = tab.locator(".message-assistant .message-text")
        expect(reply).to_contain_text("That is all.", timeout=WAIT_MS)

        expect(reply.locator(".katex")).to_have_count(2)  # one inline, one display
        expect(reply.locator(".katex-display")).to_have_count(1)
        assert "e^{i\\pi}+1=0" in (reply.locator(".katex annotation").first.text_content() or "")
        # KaTeX's own stylesheet is loaded (from the npm package): its fonts hide the
        # MathML copy, which is only for screen readers.
        mathml = reply.locator(".katex-mathml").first
        tab.wait_for_function(
            "el => getComputedStyle(el).position === 'absolute'", arg=mathml.element_handle()
        )

        # Prism splits the block into coloured tokens: the keyword is not in the text colour.
        code = reply.locator(".code-block pre")
        keyword = code.locator("span.token", has_text="def").first
        expect(keyword).to_have_text("def", timeout=WAIT_MS)
        colour = "el => getComputedStyle(el).color"
        assert tab.evaluate(colour, keyword.element_handle()) != tab.evaluate(
            colour, code.element_handle()
        )

        user = tab.locator(".message-user .message-text")
        expect(user).to_contain_text("<script>window.__ran = true</script>")
        assert tab.locator("#transcript script").count() == 0
        assert tab.evaluate("window.__ran === undefined")


def clipboard(tab: Page) -> str:
    return tab.evaluate("navigator.clipboard.readText()")


class TestCopyAndSendTimes:
    def test_every_message_and_code_block_copies_its_text_and_confirms(
        self, app: AppServer, browser: Browser
    ):
        tab = open_chat(browser, app)
        send(tab, "Copy **me** please")
        wait_for_reply_end(tab)
        expect(tab.locator(".message-assistant .message-text")).to_contain_text("That is all.")

        copy_user = tab.locator(".message-user .copy-message")
        copy_user.click()
        expect(copy_user).to_have_text("Copied", timeout=WAIT_MS)
        assert clipboard(tab) == "Copy **me** please"  # the markdown as written
        expect(copy_user).to_have_text("Copy", timeout=WAIT_MS)  # the confirmation passes

        copy_reply = tab.locator(".message-assistant .copy-message")
        copy_reply.click()
        expect(copy_reply).to_have_text("Copied", timeout=WAIT_MS)
        assert clipboard(tab) == REPLY

        copy_code = tab.locator(".message-assistant .copy-code")
        copy_code.click()
        expect(copy_code).to_have_text("Copied", timeout=WAIT_MS)
        assert clipboard(tab) == CODE

    def test_hovering_a_message_time_shows_the_exact_time_it_was_sent(
        self, app: AppServer, browser: Browser
    ):
        tab = open_chat(browser, app)
        before_ms = tab.evaluate("Date.now()")
        send(tab, "What time is it?")
        wait_for_reply_end(tab)
        after_ms = tab.evaluate("Date.now()")
        for role in ("user", "assistant"):
            sent = tab.locator(f".message-{role} time.sent-time")
            expect(sent).to_have_count(1, timeout=WAIT_MS)
            at_ms = tab.evaluate("el => Date.parse(el.dateTime)", sent.element_handle())
            assert before_ms - 1000 <= at_ms <= after_ms + 1000
            # The tooltip is the full date and time to the second, in the reader's locale.
            expected = tab.evaluate(
                """ms => new Date(ms).toLocaleString(undefined, {weekday: "short",
                    year: "numeric", month: "short", day: "numeric", hour: "2-digit",
                    minute: "2-digit", second: "2-digit", timeZoneName: "short"})""",
                at_ms,
            )
            expect(sent).to_have_attribute("title", expected)


CSV = b"city,total\nOslo,12\nBergen,7\n"
PDF = pdf_with_text("Quarterly revenue grew", "by nine percent")


class TestAttachingDocuments:
    def test_a_csv_and_a_pdf_show_as_chips_download_again_and_reach_the_model_as_text(
        self, app: AppServer, browser: Browser, model: FakeOpenAI
    ):
        tab = open_chat(browser, app)
        tab.locator("#image-upload input[type=file]").set_input_files(
            files=[
                {"name": "sales.csv", "mimeType": "text/csv", "buffer": CSV},
                {"name": "q3.pdf", "mimeType": "application/pdf", "buffer": PDF},
            ]
        )
        pending = tab.locator("#pending-files .file-chip")
        expect(pending).to_have_count(2, timeout=WAIT_MS)
        expect(pending.nth(0)).to_contain_text("sales.csv")
        expect(pending.nth(0)).to_contain_text(f"{len(CSV)} B")
        expect(pending.nth(1)).to_contain_text("q3.pdf")

        asked = len(model.requests)
        send(tab, "Summarise these")
        wait_for_reply_end(tab)
        chips = tab.locator(".message-user .file-chip")
        expect(chips).to_have_count(2, timeout=WAIT_MS)
        expect(tab.locator("#pending-files .file-chip")).to_have_count(0)

        with tab.expect_download(timeout=WAIT_MS) as download:
            chips.nth(0).locator("a.file-download").click()
        assert download.value.suggested_filename == "sales.csv"
        assert Path(download.value.path()).read_bytes() == CSV

        request = model.requests[asked]
        user_turn = [m for m in request.body["messages"] if m["role"] == "user"][-1]
        content = json.dumps(user_turn["content"])
        assert "Bergen,7" in content
        assert "Quarterly revenue grew" in content
        assert "Summarise these" in content

    def test_an_executable_is_refused_before_anything_is_uploaded(
        self, app: AppServer, browser: Browser
    ):
        tab = open_chat(browser, app)
        # react-dropzone still reports the drop (with no accepted file): whatever reaches the
        # upload endpoint must not hold the refused file.
        uploaded: list[bytes] = []
        tab.on(
            "request",
            lambda r: uploaded.append(r.post_data_buffer or b"") if "_upload" in r.url else None,
        )
        tab.locator("#image-upload input[type=file]").set_input_files(
            files=[
                {
                    "name": "setup.exe",
                    "mimeType": "application/x-msdownload",
                    "buffer": b"MZ" + b"\0" * 64,
                }
            ]
        )
        expect(tab.get_by_text("setup.exe cannot be attached")).to_be_visible(timeout=WAIT_MS)
        expect(tab.locator("#pending-files .file-chip")).to_have_count(0)
        assert not any(b"setup.exe" in body or b"MZ" in body for body in uploaded)
