"""A member of a shared chat, or a stranger, against the app's own HTTP routes (raw requests
through ASGI, the real services and sharing store): the export routes read only the
requester's own directory, so a shared chat's content leaves only through its owner; a
member's full export lists it without content; the link page serves the snapshot only."""

from __future__ import annotations

import json
import zipfile
from collections.abc import AsyncIterator, Iterator
from io import BytesIO
from pathlib import Path

import httpx
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from backend.config import Settings
from backend.sharing import ChatRef, Sharing, SnapshotMessage
from chatsapp import services as services_module
from chatsapp.routes import share_link
from chatsapp.routes.exports import ALL_PATH, chat_export_path, export_routes
from chatsapp.routes.share_link import process_sharing, share_link_routes
from chatsapp.services import Services
from tests.support.signed_in import session_cookie, sign_in

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def app_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    settings = Settings.from_env(
        {"CHATS_DATA_DIR": str(tmp_path / "data"), "CHATS_PASSWORD_HASH_PROFILE": "cheapest"}
    )
    made = Services(settings)
    monkeypatch.setattr(services_module, "_services", made)
    opened: list[Sharing] = []
    monkeypatch.setattr(share_link, "_opened", opened)  # this test's data folder
    yield made
    for sharing in opened:
        sharing.close()


@pytest.fixture
async def client(app_services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=_by_path(export_routes(), share_link_routes()))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


def _by_path(exports: ASGIApp, links: ASGIApp) -> ASGIApp:
    """The two route sets, as the app mounts them in front of Reflex."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        app = exports if scope["path"].startswith("/export") else links
        await app(scope, receive, send)

    return asgi


@pytest.fixture
def people(app_services: Services) -> dict[str, str]:
    """Cookies of olivia (owner), pat (a participant of her chat) and sam (a stranger)."""
    tokens = {name: sign_in(app_services, name) for name in ("olivia", "pat", "sam")}
    return {name: token for name, (_, token) in tokens.items()} | {
        f"{name}_id": user_id for name, (user_id, _) in tokens.items()
    }


@pytest.fixture
def trip(app_services: Services, people: dict[str, str]) -> ChatRef:
    owner_id = people["olivia_id"]
    chats = app_services.directory(owner_id)
    chat_id = chats.create_chat("Trip").id
    chats.get_chat(chat_id).session.append_message(
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "door code 4417"}]}
    )
    chat = ChatRef(owner_id=owner_id, chat_id=chat_id)
    owner = app_services.accounts().user(owner_id)
    assert owner is not None
    process_sharing().share(owner, chat, "pat", "participant")
    return chat


async def test_a_member_cannot_export_the_shared_chat_by_id(client, people, trip):
    unknown = await client.get(
        chat_export_path("c-unknown", "json"), headers=session_cookie(people["pat"])
    )
    for who in ("pat", "sam"):
        for kind in ("json", "md"):
            answer = await client.get(
                chat_export_path(trip.chat_id, kind), headers=session_cookie(people[who])
            )
            assert (answer.status_code, answer.content) == (404, unknown.content)
    owner = await client.get(
        chat_export_path(trip.chat_id, "json"), headers=session_cookie(people["olivia"])
    )
    assert owner.status_code == 200 and "4417" in owner.text


async def test_a_members_full_export_lists_the_shared_chat_without_its_content(
    client, people, trip
):
    answer = await client.get(ALL_PATH, headers=session_cookie(people["pat"]))
    assert answer.status_code == 200
    with zipfile.ZipFile(BytesIO(answer.content)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        everything = b"".join(archive.read(name) for name in archive.namelist())
    assert [(e["owner_username"], e["chat_id"], e["role"]) for e in manifest["shared_with_me"]] == [
        ("olivia", trip.chat_id, "participant")
    ]
    assert manifest["chats"] == [] and b"4417" not in everything
    stranger = await client.get(ALL_PATH, headers=session_cookie(people["sam"]))
    with zipfile.ZipFile(BytesIO(stranger.content)) as archive:
        assert json.loads(archive.read("manifest.json"))["shared_with_me"] == []


async def test_the_link_page_holds_the_snapshot_and_a_guess_gets_404(
    client, app_services, people, trip
):
    owner = app_services.accounts().user(people["olivia_id"])
    assert owner is not None
    made = process_sharing().create_link(
        owner,
        trip,
        "Trip",
        [SnapshotMessage(author="olivia", role="user", text="hi", created_at=1)],
    )
    page = await client.get(f"/share/{made.token}")
    assert page.status_code == 200 and ">hi<" in page.text
    for secret in ("4417", trip.chat_id, people["olivia_id"], people["pat_id"]):
        assert secret not in page.text
    guessed = await client.get(
        "/share/" + made.token[:-1] + ("A" if made.token[-1] != "A" else "B")
    )
    assert guessed.status_code == 404
