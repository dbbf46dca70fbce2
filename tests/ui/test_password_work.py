"""A burst of password posts never slows everyone's events: hashing has a pool of its own.

Issue 27, hole 4: ``POST /auth/setup`` hashed on the default thread pool, the one every
event's identity lookup (:func:`chatsapp.auth.identity.identify`) runs on; six posts a second made
every person's events ~220x slower. Here argon2 holds its thread until the test lets it go, so
no clock is read: with a burst of sign-ups holding every hashing thread, the lookups either
finish (the pools are apart) or wait for ever (they share one).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest

from backend.accounts import CONSOLE_ACTOR
from backend.accounts.passwords import PASSWORD_WORKERS
from chatsapp.auth.identity import SESSION_COOKIE, identify
from chatsapp.routes.account_forms import auth_routes
from chatsapp.services import Services, offload
from tests.support.deadlines import WAIT_S, until
from tests.support.signed_in import sign_in

pytestmark = pytest.mark.anyio

BURST = 40
LOOKUPS = 15
ORIGIN = {"origin": "http://127.0.0.1"}


@pytest.fixture
async def client(app_services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=auth_routes())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


@dataclass
class HeldHashing:
    """argon2 that holds its thread while ``go`` is clear; ``hashed`` names every password."""

    hashed: list[str] = field(default_factory=list)
    go: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def slow_hashing(app_services: Services, monkeypatch: pytest.MonkeyPatch):
    passwords = app_services.accounts()._passwords
    real_hash = passwords.hash
    held = HeldHashing()
    held.go.set()

    def held_hash(password: str) -> str:
        held.hashed.append(password)
        held.go.wait(timeout=WAIT_S)
        return real_hash(password)

    monkeypatch.setattr(passwords, "hash", held_hash)
    yield held
    held.go.set()


async def _event_lookups(token: str) -> None:
    """Identity lookups one after another, as one tab's events make them (the default pool)."""
    for _ in range(LOOKUPS):
        viewer = await offload(identify, {"cookie": f"{SESSION_COOKIE}={token}"}, "127.0.0.1")
        assert viewer is not None


class TestPasswordHashingHasItsOwnPool:
    async def test_event_lookups_finish_while_a_burst_of_sign_ups_holds_every_hashing_thread(
        self,
        client,
        app_services,
        slow_hashing,
    ):
        _, token = sign_in(app_services, "alice")
        accounts = app_services.accounts()
        accounts.set_signup_policy(
            accounts.create_user(CONSOLE_ACTOR, "boss", "a long admin password", "admin").id,
            "open",
        )
        slow_hashing.hashed.clear()
        slow_hashing.go.clear()

        async def sign_up(index: int) -> httpx.Response:
            form = {"username": f"burst{index}", "password": "a long enough password"}
            return await client.post("/auth/sign-up", data=form, headers=ORIGIN)

        burst = asyncio.gather(*(sign_up(index) for index in range(BURST)))
        await until(
            lambda: len(slow_hashing.hashed) >= PASSWORD_WORKERS, what="every hashing thread held"
        )
        async with asyncio.timeout(WAIT_S):  # sharing one pool, they would never finish
            await _event_lookups(token)
        assert len(slow_hashing.hashed) == PASSWORD_WORKERS  # still held: none had finished
        slow_hashing.go.set()
        responses = await burst

        assert all(r.status_code == 303 for r in responses)
        # Each post hashed once, or was refused at once past the bounded queue, unhashed.
        busy = [r for r in responses if "Too+many+attempts" in r.headers["location"]]
        assert len(slow_hashing.hashed) + len(busy) == BURST

    async def test_setup_posts_with_a_wrong_code_or_after_setup_hash_nothing(
        self,
        client,
        app_services,
        slow_hashing,
    ):
        # Issue 27, hole 4: each post hashed first, for anyone, setup done or not.
        code = app_services.accounts().setup_code_for_console()
        form = {"setup_code": "0000-0000-0000", "username": "racer", "password": "x" * 12}
        wrong = await client.post("/auth/setup", data=form, headers=ORIGIN)
        assert "error=" in wrong.headers["location"]
        assert slow_hashing.hashed == []
        form |= {"setup_code": code, "username": "owner"}
        assert (
            "error="
            not in (await client.post("/auth/setup", data=form, headers=ORIGIN)).headers["location"]
        )
        assert len(slow_hashing.hashed) == 1
        again = await client.post("/auth/setup", data=form | {"username": "late"}, headers=ORIGIN)
        assert "error=" in again.headers["location"]
        assert len(slow_hashing.hashed) == 1
