"""``CHATS_AUTH=header``: a trusted proxy names the person; anyone else is refused, clearly.

Two apps in turn, each trusting a different proxy address. The browser always connects from
127.0.0.1 and sends the identity header: the app that trusts 127.0.0.1 signs it in as that
person; the app that trusts only another address refuses it with a clear page.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.app_server import AppServer, start_app
from tests.e2e.test_live_sidebar import TIMEOUT_MS

HEADER = "X-Remote-User"


def header_app(tmp_path_factory: pytest.TempPathFactory, proxies: str) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("header-mode")
    env = {"CHATS_AUTH": "header", "CHATS_AUTH_HEADER": HEADER, "CHATS_TRUSTED_PROXIES": proxies}
    server = start_app(base / "data", base / "app.log", env=env)
    yield server
    server.stop()


@pytest.fixture(scope="class")
def trusting_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    yield from header_app(tmp_path_factory, "127.0.0.1")


@pytest.fixture(scope="class")
def distrusting_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    yield from header_app(tmp_path_factory, "10.9.9.9")


class TestBehindATrustedProxy:
    def test_the_person_the_proxy_names_is_signed_in_as_them(
        self, trusting_app: AppServer, browser: Browser
    ):
        page = browser.new_context(extra_http_headers={HEADER: "zed"}).new_page()
        page.goto(trusting_app.url)
        expect(page.locator("#account-name")).to_have_text("zed", timeout=60_000)
        expect(page.locator("#sign-out")).to_have_count(0)  # the proxy signs people out


class TestNotThroughATrustedProxy:
    def test_the_identity_header_is_refused_with_a_clear_page(
        self, distrusting_app: AppServer, browser: Browser
    ):
        page = browser.new_context(extra_http_headers={HEADER: "zed"}).new_page()
        page.goto(distrusting_app.url)
        expect(page.locator("#header-refused")).to_be_visible(timeout=60_000)
        expect(page.locator("#sidebar")).to_have_count(0)
        expect(page.locator("#account-name")).to_have_count(0, timeout=TIMEOUT_MS)
