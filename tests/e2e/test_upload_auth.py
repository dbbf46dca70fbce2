"""A client token someone learned is no credential on ``POST /_upload``.

Reflex's upload route names the tab by its ``Reflex-Client-Token`` header, and the event it
queues was checked against the person of that tab's *socket* — so a closed tab's token (the
socket URL carries it: proxy logs hold it) let a client with no cookie at all attach files to
the owner's composer, import chats into their account, read the answer's copy of their tab,
and renew their session. Every upload is now checked from its own request (the cookie, the
trusted proxy's header, the peer) against the person the token is bound to, before the body
is read. Raw HTTP below the browser, as an attacker would send it.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from backend.accounts.tokens import hash_secret
from backend.chats import Chats
from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.states.settings import SettingsTabState
from tests.e2e.helpers import ATTACH, CHATGPT, OWNERS_AGENT, TINY_PNG, open_and_close_tab
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_S

OWNER = "ulla"  # a person no other browser story uses
THIEF = "ulf"
IMPORT = f"{SettingsTabState.get_full_name()}.upload_import"


@dataclass(frozen=True)
class Owner:
    user_id: str
    session: str  # her session token (the cookie her tab's socket carried)
    client_token: str  # her closed tab's token: what the attacker learned


def upload(
    server: AppServer,
    client_token: str,
    handler: str,
    files: list[tuple[str, tuple[str, bytes, str]]],
    session: str = "",
) -> httpx.Response:
    headers = {"Reflex-Client-Token": client_token, "Reflex-Event-Handler": handler}
    if session:
        headers["Cookie"] = f"{SESSION_COOKIE}={session}"
    return httpx.post(f"{server.backend_url}/_upload", headers=headers, files=files, timeout=WAIT_S)


def picture(name: str = "dot.png") -> list[tuple[str, tuple[str, bytes, str]]]:
    return [("files", (name, TINY_PNG, "image/png"))]


@pytest.fixture(scope="module")
def owner(app_server: AppServer) -> Owner:
    session = app_server.session_token(OWNER)
    return Owner(app_server.user_id(OWNER), session, open_and_close_tab(app_server, session))


def session_expiry(server: AppServer, session: str) -> int:
    with sqlite3.connect(server.data_dir / "accounts.sqlite") as db:
        row = db.execute(
            "SELECT expires_at FROM sessions WHERE token_hash = ?", (hash_secret(session),)
        ).fetchone()
    assert row is not None
    return int(row[0])


def age_session(server: AppServer, session: str) -> int:
    """Her session, used past half its lifetime: the next use of it renews it."""
    expires_at = int(time.time() * 1000) + 3_600_000
    with sqlite3.connect(server.data_dir / "accounts.sqlite") as db:
        db.execute(
            "UPDATE sessions SET expires_at = ? WHERE token_hash = ?",
            (expires_at, hash_secret(session)),
        )
    return expires_at


def chat_count(server: AppServer, user_id: str) -> int:
    with Chats(server.data_dir, user_id) as chats:
        return len(chats.list_chats())


@pytest.fixture
def thief_session(app_server: AppServer) -> Iterator[str]:
    yield app_server.session_token(THIEF)


class TestAnUploadWithALearnedClientToken:
    def test_without_a_cookie_is_refused_before_anything_is_attached_or_echoed(
        self, app_server: AppServer, owner: Owner
    ):
        response = upload(app_server, owner.client_token, ATTACH, picture())
        assert response.status_code == 403, response.text[:500]
        assert OWNERS_AGENT not in response.text
        assert "data:image/png" not in response.text

    def test_with_another_persons_cookie_is_refused(
        self, app_server: AppServer, owner: Owner, thief_session: str
    ):
        response = upload(app_server, owner.client_token, ATTACH, picture(), thief_session)
        assert response.status_code == 403, response.text[:500]
        assert "data:image/png" not in response.text

    def test_cannot_import_chats_into_the_owners_account(self, app_server: AppServer, owner: Owner):
        before = chat_count(app_server, owner.user_id)
        files = [("files", ("conversations.json", CHATGPT.read_bytes(), "application/json"))]
        response = upload(app_server, owner.client_token, IMPORT, files)
        assert response.status_code == 403, response.text[:500]
        assert chat_count(app_server, owner.user_id) == before

    def test_does_not_renew_the_owners_session(self, app_server: AppServer, owner: Owner):
        aged = age_session(app_server, owner.session)
        response = upload(app_server, owner.client_token, ATTACH, picture())
        assert response.status_code == 403
        assert session_expiry(app_server, owner.session) == aged

    def test_a_made_up_token_is_refused(self, app_server: AppServer, thief_session: str):
        for token in (str(uuid.uuid4()), f"user-{uuid.uuid4()}"):
            response = upload(app_server, token, ATTACH, picture(), thief_session)
            assert response.status_code == 403, (token, response.text[:500])


class TestTheOwnersOwnUpload:
    def test_with_her_cookie_on_her_tab_is_attached(self, app_server: AppServer):
        session = app_server.session_token(OWNER)
        token = open_and_close_tab(app_server, session)
        response = upload(app_server, token, ATTACH, picture(), session)
        assert response.status_code == 200, response.text[:500]
        assert "data:image/png" in response.text  # the thumbnail's address, in her tab's update
