"""Settings → Import refuses a file over ``CHATS_MAX_IMPORT_BYTES`` with a clear message.

Its own app (the limit is a server setting); a module with its own app uses no other, since
two dev servers of one project share the compiled frontend.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.e2e.helpers import CHATGPT, open_tab
from tests.support.app_server import AppServer, start_app
from tests.support.deadlines import WAIT_MS


@pytest.fixture(scope="module")
def small_limit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """An app whose import limit (1,000 bytes) is below the ChatGPT fixture's size.

    The suite's one app on the development server (``CHATS_ENV=dev``): it keeps working.
    """
    base = tmp_path_factory.mktemp("small-limit")
    server = start_app(
        base / "data", base / "app.log", env={"CHATS_MAX_IMPORT_BYTES": "1000"}, mode="dev"
    )
    yield server
    server.stop()


class TestImportLimit:
    def test_a_file_over_the_import_limit_is_refused_and_nothing_is_imported(
        self, small_limit_server: AppServer, browser: Browser
    ):
        assert CHATGPT.stat().st_size > 1000
        tab = open_tab(browser, small_limit_server, "/settings", user="lena")
        expect(tab.locator("#import-section")).to_contain_text("Largest file: 1.0 kB")
        tab.locator("#import-upload input[type=file]").set_input_files(str(CHATGPT))
        expect(tab.locator("#import-error")).to_contain_text(
            "This file is over the import limit", timeout=WAIT_MS
        )
        expect(tab.locator("#import-error")).to_contain_text("Nothing was imported")
        expect(tab.locator(".chat-item")).to_have_count(0)
