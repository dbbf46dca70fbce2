"""Model output cannot make the browser fetch remote URLs; the production page sends a CSP.

Runs the shared model app (tests/e2e/conftest.py; production, as ``scripts/run`` does: one port
serves the built page and the websocket) as ines, with a fake OpenAI-compatible server whose reply
embeds an image hosted by a probe server that records every request it receives.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.helpers import TINY_PNG, create_chat, open_tab, send, wait_for_reply_end
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS, WAIT_S
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_replies import text

USER = "ines"

# Every CSP violation the page reports, kept where the test can read it.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push({directive: e.violatedDirective, blocked: e.blockedURI});
});
"""


class _QuietServer(ThreadingHTTPServer):
    """Says nothing when the browser drops a connection (a closed tab), loud otherwise."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ProbeServer:
    """An HTTP server on 127.0.0.1 that answers a PNG and records every path requested."""

    def __init__(self) -> None:
        requests: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(TINY_PNG)))
                self.end_headers()
                self.wfile.write(TINY_PNG)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.requests = requests
        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.origin = f"http://127.0.0.1:{self._server.server_address[1]}"

    def wait_for_request(self, path: str, timeout_s: float = WAIT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while path not in self.requests:
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} never requested; got {self.requests}")
            time.sleep(0.05)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def probe() -> Iterator[ProbeServer]:
    server = ProbeServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def image_model(probe: ProbeServer, model_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    reply = text("Here is the chart: ", f"![chart]({probe.origin}/probe.png)", " and that is all.")
    with model_server.replying(reply):
        yield model_server


@pytest.fixture(scope="module")
def prod_app(model_app: AppServer, image_model: FakeOpenAI) -> AppServer:
    return model_app


def open_recording_tab(browser: Browser, server: AppServer) -> Page:
    page = server.signed_in_context(
        browser, USER, viewport={"width": 1280, "height": 800}
    ).new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(server.url)
    expect(page.locator("#sidebar")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#chat-list .rt-Skeleton")).to_have_count(0, timeout=WAIT_MS)
    return page


class TestRemoteImagesInReplies:
    def test_a_remote_image_is_a_link_naming_its_host_and_is_fetched_only_on_click(
        self, prod_app: AppServer, probe: ProbeServer, browser: Browser
    ):
        tab = open_tab(browser, prod_app, user=USER)
        create_chat(tab)
        send(tab, "Show me the chart")
        wait_for_reply_end(tab)
        reply = tab.locator(".message-assistant .message-text")
        expect(reply).to_contain_text("and that is all.", timeout=WAIT_MS)

        # The reply is on screen, image position included: nothing in the page points an <img>
        # at the probe, so no request can be on its way.
        link = reply.locator("a.remote-image")
        expect(link).to_contain_text(probe.origin.removeprefix("http://"))
        assert tab.locator("img[src*='probe.png']").count() == 0
        assert probe.requests == []

        with tab.context.expect_page(timeout=WAIT_MS):
            link.click()
        probe.wait_for_request("/probe.png")


class TestContentSecurityPolicy:
    def test_the_page_response_carries_a_policy_that_forbids_remote_images(
        self, prod_app: AppServer
    ):
        response = httpx.get(prod_app.url, timeout=WAIT_S)
        policy = response.headers.get("content-security-policy", "")
        assert "img-src 'self' data: blob:" in policy
        assert "connect-src 'self'" in policy

    def test_the_app_works_under_the_policy_and_it_blocks_a_remote_image_anyway(
        self, prod_app: AppServer, probe: ProbeServer, browser: Browser
    ):
        tab = open_recording_tab(browser, prod_app)
        create_chat(tab)  # the websocket works: the new chat came back through it
        tab.locator("#image-upload input[type=file]").set_input_files(
            files=[{"name": "dot.png", "mimeType": "image/png", "buffer": TINY_PNG}]
        )
        expect(tab.locator("#pending-images img")).to_have_count(1, timeout=WAIT_MS)
        send(tab, "What is in this picture?")
        wait_for_reply_end(tab)
        attachment = tab.locator(".message-user img")
        expect(attachment).to_have_count(1, timeout=WAIT_MS)
        tab.wait_for_function(
            "img => img.complete && img.naturalWidth > 0", arg=attachment.element_handle()
        )  # a data: image loads under the policy
        assert tab.evaluate("window.__cspViolations") == []

        # An <img> pointed at another host by any other means is refused by the browser.
        blocked = f"{probe.origin}/by-script.png"
        tab.evaluate(
            "src => { const img = document.createElement('img'); img.src = src;"
            " document.body.appendChild(img); }",
            blocked,
        )
        tab.wait_for_function(
            "src => window.__cspViolations.some(v => v.blocked === src)", arg=blocked
        )
        assert "/by-script.png" not in probe.requests
