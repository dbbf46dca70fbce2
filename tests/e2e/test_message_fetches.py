"""A message cannot make its viewer's browser fetch this app's own URLs with their cookie.

``![x](/export/all.zip?x)`` in a reply (or an image part with that address, which an imported
file can carry) made every view of the chat request the whole export, built on the server
each time. Inline images now come only from the app's own ``data:``/``blob:`` attachments,
and exports answer document navigations only (a download the person asked for): an image, a
script or a ``fetch`` asking for one is refused.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from backend.chats import Chats
from chatsapp.auth.identity import SESSION_COOKIE
from tests.e2e.helpers import TINY_PNG
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS, WAIT_S

USER = "mira"  # a person no other browser story uses
TINY_PNG_URL = "data:image/png;base64," + __import__("base64").b64encode(TINY_PNG).decode()
MARKDOWN = (
    "Look: ![chart](/export/all.zip?from-markdown) and "
    "![mine](javascript:alert(1)) and the end of the note."
)
NAVIGATIONS = {
    "address bar": {"Sec-Fetch-Dest": "document", "Sec-Fetch-Mode": "navigate"},
    # What Chromium sends for a click on <a download> (how the app's export buttons work).
    "download link": {"Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "navigate"},
    "no fetch metadata": {},  # a browser too old to send it, or a script outside a browser
}
SUBRESOURCES = {
    "image": {"Sec-Fetch-Dest": "image", "Sec-Fetch-Mode": "no-cors"},
    "fetch": {"Sec-Fetch-Dest": "empty", "Sec-Fetch-Mode": "cors"},
    "script": {"Sec-Fetch-Dest": "script", "Sec-Fetch-Mode": "no-cors"},
    "frame": {"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"},
}


@pytest.fixture(scope="module")
def chat_path(app_server: AppServer) -> str:
    """mira's chat holding a message whose markdown and image part point at her export."""
    app_server.session_token(USER)
    with Chats(app_server.data_dir, app_server.user_id(USER)) as chats:
        chat = chats.create_chat("Fetches from a message")
        chats.get_chat(chat.id).session.append_message(
            {
                "id": "m1",
                "role": "assistant",
                "parts": [
                    {"type": "text", "text": MARKDOWN},
                    {"type": "file", "mediaType": "image/png", "url": "/export/all.zip?part"},
                    {"type": "file", "mediaType": "image/png", "url": TINY_PNG_URL},
                ],
            }
        )
        return f"/chat/{chat.id}"


@pytest.fixture
def tab(app_server: AppServer, browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    context = app_server.signed_in_context(browser, USER, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    yield page, requested
    context.close()


def export(server: AppServer, headers: dict[str, str]) -> httpx.Response:
    cookie = {"Cookie": f"{SESSION_COOKIE}={server.session_token(USER)}"}
    return httpx.get(f"{server.url}/export/all.zip", headers={**cookie, **headers}, timeout=WAIT_S)


class TestAMessagePointingAtThisApp:
    def test_its_images_are_not_fetched_and_the_attachment_still_shows(
        self, app_server: AppServer, chat_path: str, tab: tuple[Page, list[str]]
    ):
        page, requested = tab
        page.goto(app_server.url + chat_path)
        message = page.locator(".message-assistant")
        expect(message.locator(".message-text")).to_contain_text(
            "the end of the note", timeout=WAIT_MS
        )
        expect(message.locator("img[src^='data:image/png']")).to_have_count(1)
        # The message is on screen: no element of it points at the export, so no request
        # for it can be on its way.
        assert message.locator("img:not([src^='data:'])").count() == 0
        assert [url for url in requested if "/export/" in url] == []
        expect(message.locator(".image-not-shown")).to_have_count(3)

    def test_an_emptied_javascript_image_is_not_named_as_this_hosts(
        self, app_server: AppServer, chat_path: str, tab: tuple[Page, list[str]]
    ):
        page, _ = tab
        page.goto(app_server.url + chat_path)
        text = page.locator(".message-assistant .message-text")
        expect(text).to_contain_text("the end of the note", timeout=WAIT_MS)
        expect(text).to_contain_text("[image not shown “mine”]")
        expect(text).not_to_contain_text("click to open")


class TestExportsAnswerDocumentNavigationsOnly:
    @pytest.mark.parametrize("kind", sorted(NAVIGATIONS))
    def test_a_navigation_downloads_the_export(self, app_server: AppServer, kind: str):
        response = export(app_server, NAVIGATIONS[kind])
        assert response.status_code == 200
        assert response.content[:2] == b"PK"

    @pytest.mark.parametrize("kind", sorted(SUBRESOURCES))
    def test_a_subresource_request_is_refused(self, app_server: AppServer, kind: str):
        response = export(app_server, SUBRESOURCES[kind])
        assert response.status_code == 403, response.status_code
        assert response.content[:2] != b"PK"
