"""``GET /`` sends a signed-in person with chats to their latest chat before any page loads."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from chatsapp.routes.home_redirect import LatestChatRedirect
from chatsapp.services import Services
from tests.support.signed_in import session_cookie, sign_in

pytestmark = pytest.mark.anyio


async def _pages(scope: Scope, receive: Receive, send: Send) -> None:
    """Stands for the app behind the middleware: every address is a page."""
    await PlainTextResponse(f"page {scope['path']}")(scope, receive, send)


@pytest.fixture
async def client(app_services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=LatestChatRedirect(_pages))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


class TestTheHomePage:
    async def test_someone_with_chats_is_sent_to_the_top_one_of_their_list(
        self,
        client,
        app_services,
    ):
        user_id, token = sign_in(app_services, "alice")
        chats = app_services.directory(user_id)
        for title in ("One", "Two", "Three"):
            chats.create_chat(title)
        top = chats.list_chats()[0]

        response = await client.get("/", headers=session_cookie(token))

        assert response.status_code == 307
        assert response.headers["location"] == f"/chat/{top.id}"
        assert response.headers["cache-control"] == "no-store"

    async def test_someone_without_chats_gets_the_page(self, client, app_services):
        _, token = sign_in(app_services, "newcomer")
        response = await client.get("/", headers=session_cookie(token))
        assert (response.status_code, response.text) == (200, "page /")

    async def test_nobody_signed_in_gets_the_page_and_learns_nothing(self, client, app_services):
        user_id, _ = sign_in(app_services, "alice")
        app_services.directory(user_id).create_chat("Private")
        for headers in ({}, session_cookie("not-a-session")):
            response = await client.get("/", headers=headers)
            assert (response.status_code, response.text) == (200, "page /")

    async def test_other_addresses_and_methods_pass_through(self, client, app_services):
        user_id, token = sign_in(app_services, "alice")
        app_services.directory(user_id).create_chat("Mine")
        assert (
            await client.get("/settings", headers=session_cookie(token))
        ).text == "page /settings"
        assert (await client.post("/", headers=session_cookie(token))).text == "page /"

    async def test_archived_chats_are_not_where_it_sends_you(self, client, app_services):
        user_id, token = sign_in(app_services, "alice")
        chats = app_services.directory(user_id)
        kept = chats.create_chat("Kept")
        archived = chats.create_chat("Put away")
        chats.archive_chat(archived.id)

        response = await client.get("/", headers=session_cookie(token))

        assert response.headers["location"] == f"/chat/{kept.id}"
