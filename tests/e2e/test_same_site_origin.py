"""A page on the same host at another port is the same *site*, not the same *origin*.

``SameSite=Strict`` keeps the session cookie off requests from other sites only: a page of
another web app on the same machine (another port, as self-hosted machines often run) gets
the cookie sent along with its requests to Chats. Such a page must not read an export, open
the event socket as the signed-in person, or sign them out with an auto-submitting form.

Each story runs in a real browser, signed in, on a page served from another port of the
app's own host; a control from the app's own origin shows what "worked" looks like.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from chatsapp.auth.identity import SESSION_COOKIE
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS

USER = "sasha"  # a person no other browser story uses

READ_EXPORT = """async (url) => {
  try {
    const response = await fetch(url, {credentials: "include"});
    const body = await response.arrayBuffer();
    return {status: response.status, bytes: body.byteLength};
  } catch (error) {
    return {error: String(error)};
  }
}"""

OPEN_SOCKET = """(url) => new Promise((resolve) => {
  const socket = new WebSocket(url);
  socket.onopen = () => { resolve("open"); socket.close(); };
  socket.onerror = () => resolve("refused");
})"""


class OtherOriginSite:
    """Pages served from ``host`` at a port of their own: another app on the same machine."""

    def __init__(self, host: str) -> None:
        pages: dict[str, str] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path.split("?")[0], "<p>other app</p>").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.pages = pages
        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.origin = f"http://{host}:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="module")
def other_site(app_server: AppServer) -> Iterator[OtherOriginSite]:
    host = urlsplit(app_server.url).hostname
    assert host is not None
    site = OtherOriginSite(host)
    yield site
    site.stop()


@pytest.fixture
def signed_in(app_server: AppServer, browser: Browser) -> Iterator[tuple[BrowserContext, str]]:
    """A browser holding a fresh session of sasha's (cookie of the app's host), and its token."""
    token = app_server.session_token(USER)
    context = browser.new_context()
    context.add_cookies(
        [
            {
                "name": SESSION_COOKIE,
                "value": token,
                "url": app_server.url,
                "httpOnly": True,
                "sameSite": "Strict",
            }
        ]
    )
    yield context, token
    context.close()


def visit(context: BrowserContext, url: str) -> Page:
    page = context.new_page()
    page.goto(url)
    return page


def socket_url(server: AppServer) -> str:
    base = server.backend_url.replace("http://", "ws://", 1)
    return f"{base}/_event/?EIO=4&transport=websocket&token={uuid.uuid4()}"


def still_signed_in(server: AppServer, token: str) -> bool:
    accounts = server.accounts()
    try:
        return accounts.resolve(token) is not None
    finally:
        accounts.close()


class TestAPageOfAnotherOriginOnTheSameHost:
    def test_cannot_read_the_signed_in_persons_export(
        self,
        app_server: AppServer,
        other_site: OtherOriginSite,
        signed_in: tuple[BrowserContext, str],
    ):
        page = visit(signed_in[0], other_site.origin + "/")
        result = page.evaluate(READ_EXPORT, app_server.url + "/export/all.zip")
        assert result.get("status") != 200, f"the other origin read the export: {result}"

    def test_cannot_open_the_event_socket_with_the_cookie(
        self,
        app_server: AppServer,
        other_site: OtherOriginSite,
        signed_in: tuple[BrowserContext, str],
    ):
        own = visit(signed_in[0], app_server.url + "/sign-in")
        assert own.evaluate(OPEN_SOCKET, socket_url(app_server)) == "open"  # the control
        page = visit(signed_in[0], other_site.origin + "/")
        assert page.evaluate(OPEN_SOCKET, socket_url(app_server)) == "refused"

    def test_cannot_sign_the_person_out_with_an_auto_submitting_form(
        self,
        app_server: AppServer,
        other_site: OtherOriginSite,
        signed_in: tuple[BrowserContext, str],
    ):
        context, token = signed_in
        other_site.pages["/sign-out.html"] = (
            f'<form method="post" action="{app_server.url}/auth/sign-out"></form>'
            "<script>document.forms[0].submit()</script>"
        )
        page = context.new_page()
        with page.expect_navigation(url=re.compile(r"/(auth/sign-out|sign-in)"), timeout=WAIT_MS):
            page.goto(other_site.origin + "/sign-out.html")
        assert not page.url.startswith(other_site.origin), f"redirected to {page.url}"
        assert still_signed_in(app_server, token)
