"""The export downloads reach only the signed-in person, and hold what the format promises."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from backend.portability import CHAT_FORMAT, ZIP_EXPORT_FORMAT, import_file
from chatsapp.routes.exports import ALL_PATH, MAX_LEAF_CHARS, chat_export_path, export_routes
from chatsapp.services import Services
from tests.portability.conftest import FIXTURES, PNG
from tests.support.signed_in import session_cookie, sign_in

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(app_services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=export_routes())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


def _chatgpt_zip(tmp_path: Path) -> Path:
    path = tmp_path / "chatgpt.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.write(FIXTURES / "chatgpt_conversations.json", "conversations.json")
        archive.writestr("file-Plot123-sine.png", PNG)
    return path


def _title_ids(made: Services, user_id: str) -> dict[str, str]:
    return {s.title: s.id for s in made.directory(user_id).list_chats()}


class TestWhoMayDownload:
    async def test_without_a_session_cookie_nothing_is_exported(self, client, app_services):
        user_id, _ = sign_in(app_services, "alice")
        chat = app_services.directory(user_id).create_chat("Private")
        assert (await client.get(ALL_PATH)).status_code == 401
        assert (await client.get(chat_export_path(chat.id, "json"))).status_code == 401
        stale = session_cookie("not-a-session")
        assert (await client.get(chat_export_path(chat.id, "md"), headers=stale)).status_code == 401

    async def test_another_persons_chat_id_is_not_found(self, client, app_services):
        alice_id, _ = sign_in(app_services, "alice")
        _, bob_token = sign_in(app_services, "bob")
        chat = app_services.directory(alice_id).create_chat("Alice's secret")
        for kind in ("json", "md"):
            answer = await client.get(
                chat_export_path(chat.id, kind), headers=session_cookie(bob_token)
            )
            assert answer.status_code == 404
            assert "secret" not in answer.text

    async def test_everything_holds_only_the_signed_in_persons_chats(self, client, app_services):
        alice_id, alice_token = sign_in(app_services, "alice")
        bob_id, _ = sign_in(app_services, "bob")
        mine = app_services.directory(alice_id).create_chat("Mine")
        app_services.directory(bob_id).create_chat("Bob's")
        answer = await client.get(ALL_PATH, headers=session_cookie(alice_token))
        assert answer.status_code == 200
        assert "attachment" in answer.headers["content-disposition"]
        with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
            manifest = json.loads(archive.read("manifest.json"))
        assert manifest["format"] == ZIP_EXPORT_FORMAT
        assert [entry["id"] for entry in manifest["chats"]] == [mine.id]

    async def test_a_malformed_chat_id_is_not_found(self, client, app_services):
        _, token = sign_in(app_services, "alice")
        for path in ("/export/chat/..%2F..%2Fetc.json", "/export/chat/ABC.json"):
            assert (await client.get(path, headers=session_cookie(token))).status_code == 404


class TestWhatADownloadHolds:
    async def test_a_chat_as_json_is_the_lossless_document(self, client, app_services, tmp_path):
        user_id, token = sign_in(app_services, "alice")
        import_file(app_services.directory(user_id), _chatgpt_zip(tmp_path))
        chat_id = _title_ids(app_services, user_id)["Plotting sine waves"]
        answer = await client.get(chat_export_path(chat_id, "json"), headers=session_cookie(token))
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("application/json")
        document = answer.json()
        assert document["format"] == CHAT_FORMAT
        assert document["chat"]["id"] == chat_id
        assert len(document["messages"]) > 2
        assert all("data" in item for item in document["attachments"].values())

    async def test_a_chat_without_images_as_markdown_is_one_md_file(
        self, client, app_services, tmp_path
    ):
        user_id, token = sign_in(app_services, "alice")
        import_file(app_services.directory(user_id), FIXTURES / "chatgpt_conversations.json")
        chat_id = _title_ids(app_services, user_id)["Short chat"]
        answer = await client.get(chat_export_path(chat_id, "md"), headers=session_cookie(token))
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/markdown")
        assert answer.text.startswith("# Short chat")
        assert "## User" in answer.text

    async def test_a_chat_with_images_as_markdown_is_a_zip_with_them(
        self, client, app_services, tmp_path
    ):
        user_id, token = sign_in(app_services, "alice")
        import_file(app_services.directory(user_id), _chatgpt_zip(tmp_path))
        chat_id = _title_ids(app_services, user_id)["Plotting sine waves"]
        answer = await client.get(chat_export_path(chat_id, "md"), headers=session_cookie(token))
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
            names = archive.namelist()
            markdown = archive.read(f"{chat_id}.md").decode()
        images = [name for name in names if name.startswith("attachments/")]
        assert images and all(name in markdown for name in images)


class TestAForksImages:
    async def test_a_fork_downloads_with_its_images_after_the_source_is_deleted(
        self, client, app_services, tmp_path
    ):
        user_id, token = sign_in(app_services, "alice")
        chats = app_services.directory(user_id)
        url = "data:image/png;base64," + base64.b64encode(PNG).decode()
        source = chats.create_chat("With a picture")
        image = {"type": "file", "mediaType": "image/png", "url": url}
        chats.get_chat(source.id).session.append_message(
            {"id": "a", "role": "user", "parts": [image]}
        )
        fork_id = chats.fork_chat(source.id, "a").id
        chats.delete_chat(source.id)
        answer = await client.get(chat_export_path(fork_id, "md"), headers=session_cookie(token))
        assert answer.headers["content-type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(answer.content)) as archive:
            images = [archive.read(n) for n in archive.namelist() if n.startswith("attachments/")]
        assert images == [PNG]
        document = (
            await client.get(chat_export_path(fork_id, "json"), headers=session_cookie(token))
        ).json()
        assert [item["data"] for item in document["attachments"].values()] == [
            base64.b64encode(PNG).decode()
        ]


class TestMarkdownOfTheBranchATabShows:
    """``?leaf=<message id>``: the root → leaf path, for the tab that views another branch."""

    @staticmethod
    def _branches(made: Services, user_id: str) -> str:
        chat_id = made.directory(user_id).create_chat("Branches").id
        session = made.directory(user_id).get_chat(chat_id).session
        text = [{"type": "text", "text": "q?"}]
        session.append_message({"id": "q", "role": "user", "parts": text})
        first = [{"type": "text", "text": "first answer"}]
        session.append_message({"id": "a", "role": "assistant", "parts": first})
        second = [{"type": "text", "text": "second answer"}]
        session.append_message({"id": "b", "role": "assistant", "parts": second}, parent_id="q")
        return chat_id

    async def test_a_leaf_exports_that_branch_not_the_active_one(self, client, app_services):
        user_id, token = sign_in(app_services, "alice")
        chat_id = self._branches(app_services, user_id)
        path = chat_export_path(chat_id, "md")
        answer = await client.get(path, params={"leaf": "a"}, headers=session_cookie(token))
        assert answer.status_code == 200
        assert "first answer" in answer.text and "second answer" not in answer.text
        active = await client.get(path, headers=session_cookie(token))
        assert "second answer" in active.text and "first answer" not in active.text

    async def test_a_leaf_that_is_no_message_of_the_chat_is_not_found(self, client, app_services):
        user_id, token = sign_in(app_services, "alice")
        chat_id = self._branches(app_services, user_id)
        answer = await client.get(
            chat_export_path(chat_id, "md"), params={"leaf": "nope"}, headers=session_cookie(token)
        )
        assert answer.status_code == 404
        assert answer.text == "No such message in this chat."

    async def test_a_leaf_in_another_persons_chat_is_not_found(self, client, app_services):
        alice_id, _ = sign_in(app_services, "alice")
        chat_id = self._branches(app_services, alice_id)
        _, mallory = sign_in(app_services, "mallory")
        answer = await client.get(
            chat_export_path(chat_id, "md"), params={"leaf": "a"}, headers=session_cookie(mallory)
        )
        assert answer.status_code == 404
        assert answer.text == "No such chat."

    async def test_an_empty_overlong_or_json_leaf_is_refused(self, client, app_services):
        user_id, token = sign_in(app_services, "alice")
        chat_id = self._branches(app_services, user_id)
        for kind, leaf in (("md", ""), ("md", "x" * (MAX_LEAF_CHARS + 1)), ("json", "a")):
            answer = await client.get(
                chat_export_path(chat_id, kind),
                params={"leaf": leaf},
                headers=session_cookie(token),
            )
            assert answer.status_code == 400, (kind, leaf)


class TestServedFromATemporaryFile:
    async def test_the_bytes_are_sent_before_the_temporary_file_goes_even_with_zero_copy(
        self, app_services
    ):
        """Granian offers ``http.response.pathsend`` (it opens the file after the app
        returns): the download must carry its bytes itself, then leave nothing behind."""
        user_id, token = sign_in(app_services, "alice")
        app_services.directory(user_id).create_chat("Kept")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": ALL_PATH,
            "raw_path": ALL_PATH.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"cookie", session_cookie(token)["cookie"].encode()),
            ],
            "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 80),
            "extensions": {"http.response.pathsend": {}},
        }
        sent: list[dict] = []
        requested = [False]

        async def receive() -> dict:
            if not requested[0]:
                requested[0] = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.Event().wait()  # the client stays until the response ends
            raise AssertionError("unreachable")

        async def send(message: dict) -> None:
            sent.append(message)

        await export_routes()(scope, receive, send)
        assert sent[0]["status"] == 200
        assert not [m for m in sent if m["type"] == "http.response.pathsend"]
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            assert json.loads(archive.read("manifest.json"))["chats"][0]["title"] == "Kept"
