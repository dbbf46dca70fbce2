"""``CHATS_AUTH=header``: a trusted proxy names the person; anyone else is refused, clearly.

Two apps in turn on one build, each trusting a different proxy address (the classes run in
file order). The browser always connects from 127.0.0.1 and sends the identity header: the app
that trusts 127.0.0.1 signs it in as that person; the app that trusts only another address
refuses it with a clear page.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.support.app_server import AppServer, restart_app, start_app
from tests.support.deadlines import WAIT_MS

HEADER = "X-Remote-User"


def header_env(proxies: str) -> dict[str, str]:
    return {"CHATS_AUTH": "header", "CHATS_AUTH_HEADER": HEADER, "CHATS_TRUSTED_PROXIES": proxies}


@pytest.fixture(scope="module")
def apps() -> Iterator[list[AppServer]]:
    """The apps of this file, first to last (each restart replaces the one before)."""
    started: list[AppServer] = []
    yield started
    for server in reversed(started):
        server.stop()


@pytest.fixture(scope="module")
def trusting_app(
    apps: list[AppServer], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    base = tmp_path_factory.mktemp("header-mode")
    apps.append(start_app(base / "data", base / "trusting.log", env=header_env("127.0.0.1")))
    yield apps[-1]


@pytest.fixture(scope="module")
def distrusting_app(apps: list[AppServer], trusting_app: AppServer) -> Iterator[AppServer]:
    # The proxies are read at start: the same build, restarted with another address trusted
    # (a second build would cost 20-40 s).
    trusting_app.stop(keep_build=True)
    log = trusting_app.data_dir.parent / "distrusting.log"
    apps.append(restart_app(trusting_app, log, env=header_env("10.9.9.9")))
    yield apps[-1]


class TestBehindATrustedProxy:
    def test_the_person_the_proxy_names_is_signed_in_as_them(
        self, trusting_app: AppServer, browser: Browser
    ):
        page = browser.new_context(extra_http_headers={HEADER: "zed"}).new_page()
        page.goto(trusting_app.url)
        expect(page.locator("#account-name")).to_have_text("zed", timeout=WAIT_MS)
        expect(page.locator("#sign-out")).to_have_count(0)  # the proxy signs people out


class TestNotThroughATrustedProxy:
    def test_the_identity_header_is_refused_with_a_clear_page(
        self, distrusting_app: AppServer, browser: Browser
    ):
        page = browser.new_context(extra_http_headers={HEADER: "zed"}).new_page()
        page.goto(distrusting_app.url)
        expect(page.locator("#header-refused")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#sidebar")).to_have_count(0)
        expect(page.locator("#account-name")).to_have_count(0, timeout=WAIT_MS)

    def test_a_client_claiming_to_be_forwarded_by_the_proxy_is_still_refused(
        self, distrusting_app: AppServer, browser: Browser
    ):
        """The server never takes a peer's address from its own ``X-Forwarded-For``: only the
        app reads that header, and only from a trusted proxy (uvicorn would believe it from
        any local peer)."""
        spoofed = {HEADER: "zed", "X-Forwarded-For": "10.9.9.9", "X-Real-IP": "10.9.9.9"}
        page = browser.new_context(extra_http_headers=spoofed).new_page()
        page.goto(distrusting_app.url)
        expect(page.locator("#header-refused")).to_be_visible(timeout=WAIT_MS)
        expect(page.locator("#account-name")).to_have_count(0, timeout=WAIT_MS)
