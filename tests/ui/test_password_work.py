"""A burst of password posts never slows everyone's events: hashing has a pool of its own.

Issue 27, hole 4: ``POST /auth/setup`` hashed on the default thread pool, the one every
event's identity lookup (:func:`chatsapp.auth.identity.identify`) runs on; six posts a second made
every person's events ~220x slower. Here argon2 is a 0.1 s sleep (the thread held, no CPU),
so what is measured is the pool alone: the same lookups, side by side with and without a
burst of sign-ups in flight, and their times compared as a ratio.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from backend.accounts import CONSOLE_ACTOR
from chatsapp.auth.identity import SESSION_COOKIE, identify
from chatsapp.routes.account_forms import auth_routes
from chatsapp.services import Services, offload
from tests.support.signed_in import sign_in

pytestmark = pytest.mark.anyio

HASH_S = 0.1
BURST = 40
SAMPLES = 15
ORIGIN = {"origin": "http://127.0.0.1"}


@pytest.fixture
async def client(app_services: Services) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=auth_routes())
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http


@pytest.fixture
def slow_hashing(app_services: Services, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """argon2 as a thread held for ``HASH_S``; the list names every password hashed."""
    passwords = app_services.accounts()._passwords
    real_hash = passwords.hash
    hashed: list[str] = []

    def slow_hash(password: str) -> str:
        hashed.append(password)
        time.sleep(HASH_S)
        return real_hash(password)

    monkeypatch.setattr(passwords, "hash", slow_hash)
    return hashed


async def _event_lookup_s(token: str) -> float:
    """One event's identity lookup, as the event guard makes it (on the default pool)."""
    started = time.perf_counter()
    viewer = await offload(identify, {"cookie": f"{SESSION_COOKIE}={token}"}, "127.0.0.1")
    assert viewer is not None
    return time.perf_counter() - started


async def _lookups_s(token: str) -> float:
    """``SAMPLES`` lookups one after another, as one tab's events come: their total time."""
    return sum([await _event_lookup_s(token) for _ in range(SAMPLES)])


class TestPasswordHashingHasItsOwnPool:
    async def test_event_lookups_stay_fast_while_a_burst_of_sign_ups_hashes(
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
        baseline = await _lookups_s(token)
        slow_hashing.clear()

        async def sign_up(index: int) -> httpx.Response:
            form = {"username": f"burst{index}", "password": "a long enough password"}
            return await client.post("/auth/sign-up", data=form, headers=ORIGIN)

        burst = asyncio.gather(*(sign_up(index) for index in range(BURST)))
        await asyncio.sleep(HASH_S / 2)  # every post is in and waiting for a thread
        during = await _lookups_s(token)
        responses = await burst

        assert all(r.status_code == 303 for r in responses)
        # Each post hashed once, or was refused at once past the bounded queue, unhashed.
        busy = [r for r in responses if "Too+many+attempts" in r.headers["location"]]
        assert len(slow_hashing) + len(busy) == BURST
        ratio = during / baseline
        # Sharing the default pool, the lookups waited behind the queue of hashes (~100x).
        assert ratio < 10, f"{SAMPLES} lookups {baseline * 1000:.1f} -> {during * 1000:.1f} ms"

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
        assert slow_hashing == []
        form |= {"setup_code": code, "username": "owner"}
        assert (
            "error="
            not in (await client.post("/auth/setup", data=form, headers=ORIGIN)).headers["location"]
        )
        assert len(slow_hashing) == 1
        again = await client.post("/auth/setup", data=form | {"username": "late"}, headers=ORIGIN)
        assert "error=" in again.headers["location"]
        assert len(slow_hashing) == 1
