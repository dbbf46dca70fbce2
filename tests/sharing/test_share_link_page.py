"""A share link's page over raw HTTP (``chatsapp.routes.share_link``), below the browser, on
both engines: it holds the snapshot and nothing else, is never indexed, cannot be made to run
or fetch anything by what a message says, and answers one identical 404 for every token that
opens nothing, on every process at once."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import pytest

from backend.accounts import Accounts, User
from backend.config import Settings
from backend.sharing import ChatRef, SharedSnapshot, Sharing, SnapshotAttachment, SnapshotMessage
from chatsapp.routes.share_link import PAGE_POLICY, RenderedPages, share_link_routes

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
HOSTILE = (
    "<script>alert(1)</script> [click](javascript:alert(1)) ![x](https://evil.example/p.png) "
    '<img src="/export/all.zip"> $$\\href{javascript:alert(1)}{x}$$ ```html\n<iframe>\n```'
)


pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def client_for(sharing: Sharing) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=share_link_routes(lambda: sharing))
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


@pytest.fixture
async def page(sharing: Sharing) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(sharing) as http:
        yield http


def snapshot(*, with_file: bool = False) -> list[SnapshotMessage]:
    files = (SnapshotAttachment(name="sine.png", media_type="image/png", data=PNG),)
    return [
        SnapshotMessage(
            author="pat",
            role="user",
            text=HOSTILE,
            created_at=1_700_000_000_000,
            attachments=files if with_file else (),
        ),
        SnapshotMessage(author="Assistant", role="assistant", text="2 + 2 = 4", created_at=2),
    ]


def link(sharing: Sharing, owner: User, chat: ChatRef, *, with_file: bool = False) -> str:
    messages = snapshot(with_file=with_file)
    made = sharing.create_link(
        owner, chat, "Kayak <b>plans</b>", messages, include_attachments=with_file
    )
    return made.token


class TestThePage:
    async def test_it_shows_the_snapshot_rendered_safely_with_noindex_and_its_own_policy(
        self, page, sharing, owner, pat, shared
    ):
        response = await page.get(f"/share/{link(sharing, owner, shared)}")
        assert response.status_code == 200
        body = response.text
        assert response.headers["x-robots-tag"].startswith("noindex")
        assert '<meta name="robots" content="noindex, nofollow">' in body
        assert response.headers["content-security-policy"] == PAGE_POLICY
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert "Kayak &lt;b&gt;plans&lt;/b&gt;" in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert ">pat<" in body and ">Assistant<" in body and "2 + 2 = 4" in body
        assert "[image “x” from evil.example: click to open]" in body  # a link, not a fetch
        for markup in ("<script", "<iframe", "javascript:", 'src="https:', 'href="/'):
            assert markup not in body
        assert "<img" not in body  # no file was included, no image loads from a message

    async def test_an_image_on_the_pages_own_host_is_not_shown(self, page, sharing, owner, shared):
        own = "![all](http://127.0.0.1:3000/export/all.zip)"
        made = sharing.create_link(
            owner, shared, "t", [snapshot()[1].model_copy(update={"text": own})]
        )
        body = (await page.get(f"/share/{made.token}")).text
        assert "[image not shown “all”]" in body and "export/all.zip" not in body

    async def test_it_names_no_chat_and_no_person_by_id(
        self, page, sharing, owner, pat, vic, shared
    ):
        body = (await page.get(f"/share/{link(sharing, owner, shared)}")).text
        for secret in (shared.chat_id, owner.id, pat.id, vic.id, "olivia"):
            assert secret not in body

    async def test_files_appear_only_when_the_owner_included_them(
        self, page, sharing, owner, shared
    ):
        with_file = (await page.get(f"/share/{link(sharing, owner, shared, with_file=True)}")).text
        assert f'src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in with_file
        without = sharing.create_link(owner, shared, "t", snapshot(with_file=True)).token
        assert "<img" not in (await page.get(f"/share/{without}")).text


class TestNotFound:
    async def test_every_token_that_opens_nothing_gets_the_same_404_byte_for_byte(
        self, page, sharing, owner, shared
    ):
        revoked = sharing.create_link(owner, shared, "t", snapshot())
        sharing.revoke_link(owner, revoked.link.id)
        deleted_chat = link(sharing, owner, shared)
        sharing.chat_deleted(owner, shared)
        tokens = [
            "A" * 43,  # the shape of a real token
            "x",
            "%00",
            "é" * 20,
            "A" * 10_000,
            revoked.token,
            deleted_chat,
        ]
        answers = {
            (r.status_code, r.content) for r in [await page.get(f"/share/{t}") for t in tokens]
        }
        assert len(answers) == 1
        status, content = answers.pop()
        assert status == 404
        assert b"does not exist or was revoked" in content
        assert revoked.token.encode() not in content

    async def test_a_revoke_on_one_process_is_a_404_on_another_at_its_next_request(
        self, settings: Settings, accounts: Accounts, sharing, owner, shared
    ):
        token = link(sharing, owner, shared)
        with Sharing(settings, accounts) as elsewhere:
            # another process: a service of its own on the same store
            async with client_for(elsewhere) as other:
                assert (await other.get(f"/share/{token}")).status_code == 200
                made = sharing.list_links(owner)[0]
                assert sharing.revoke_link(owner, made.id)
                assert (await other.get(f"/share/{token}")).status_code == 404


class TestRenderedPages:
    def test_each_snapshot_gets_its_own_page_rendered_once_within_the_bound(self):
        pages = RenderedPages(max_bytes=60_000)
        one = SharedSnapshot(title="t", created_at=0, messages=tuple(snapshot()))
        other = one.model_copy(
            update={"messages": (one.messages[0], one.messages[1].model_copy(update={"text": "5"}))}
        )
        first = pages.page(one, "h")
        assert pages.page(one, "h") is first  # the memo: not rendered again
        assert pages.page(other, "h") != first and "2 + 2 = 4" not in pages.page(other, "h")
        assert pages.page(one, "elsewhere") is not first  # the host decides the image rule
        for n in range(40):
            pages.page(one.model_copy(update={"title": f"t{n}"}), "h")
        assert 0 < pages.held_bytes <= 60_000
