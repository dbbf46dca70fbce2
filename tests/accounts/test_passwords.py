"""Passwords are hashed with argon2id at the library's recommended cost, and a policy bounds
what a password may be."""

from __future__ import annotations

import asyncio
import threading

import argon2
import pytest

from backend.accounts import MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS, Accounts
from backend.accounts.passwords import Passwords, PasswordWork, check_password_policy
from backend.errors import InvalidPasswordError, ThrottledError
from tests.accounts.conftest import ADDRESS, PASSWORD, make_settings, raw_rows
from tests.support.deadlines import WAIT_S


class TestHashing:
    def test_a_stored_password_is_an_argon2id_hash_and_never_the_password(self, accounts, alice):
        [(stored,)] = raw_rows(accounts, "SELECT password_hash FROM users WHERE username='alice'")
        assert stored.startswith("$argon2id$")
        assert PASSWORD not in stored

    def test_the_default_profile_uses_the_libraries_recommended_parameters(self):
        recommended = argon2.PasswordHasher()
        stored = Passwords("default").hash(PASSWORD)
        params = argon2.extract_parameters(stored)
        assert params.type is argon2.Type.ID
        assert (params.time_cost, params.memory_cost, params.parallelism) == (
            recommended.time_cost,
            recommended.memory_cost,
            recommended.parallelism,
        )

    def test_a_hash_made_at_a_lower_cost_is_upgraded_at_the_next_sign_in(self, data_dir, clock):
        with Accounts(make_settings(data_dir), clock=clock) as cheap:
            cheap.create_user("@console", "alice", PASSWORD)
        settings = make_settings(data_dir, password_hash_profile="default")
        with Accounts(settings, clock=clock) as strong:
            strong.sign_in("alice", PASSWORD, ADDRESS)
            [(stored,)] = raw_rows(strong, "SELECT password_hash FROM users")
        assert argon2.extract_parameters(stored).memory_cost == argon2.PasswordHasher().memory_cost

    def test_a_wrong_password_does_not_verify(self):
        passwords = Passwords("cheapest")
        assert not passwords.verify(passwords.hash(PASSWORD), PASSWORD + "!")
        assert passwords.verify(passwords.hash(PASSWORD), PASSWORD)


class TestPolicy:
    def test_a_short_password_is_refused_with_the_rule_and_without_the_password(self):
        with pytest.raises(InvalidPasswordError) as caught:
            check_password_policy("hunter2")
        assert str(MIN_PASSWORD_CHARS) in str(caught.value)
        assert "hunter2" not in str(caught.value)

    def test_a_password_over_the_byte_limit_is_refused_so_hashing_cost_stays_bounded(self):
        with pytest.raises(InvalidPasswordError, match="at most"):
            check_password_policy("é" * (MAX_PASSWORD_BYTES // 2 + 1))

    def test_an_oversize_password_at_sign_in_is_never_hashed(self, monkeypatch):
        passwords = Passwords("cheapest")
        stored = passwords.hash(PASSWORD)
        calls = []
        monkeypatch.setattr(argon2.PasswordHasher, "verify", lambda *a: calls.append(a))
        assert not passwords.verify(stored, "x" * (MAX_PASSWORD_BYTES + 1))
        assert calls == []

    def test_creating_a_user_with_a_weak_password_creates_nothing(self, accounts, admin):
        with pytest.raises(InvalidPasswordError):
            accounts.create_user(admin.id, "bob", "short")
        assert accounts.user_by_username("bob") is None


class TestPasswordWork:
    def test_calls_past_the_workers_and_the_queue_are_refused_at_once_then_served_again(self):
        work = PasswordWork(workers=1, queue=1)
        release = threading.Event()

        async def scenario() -> list[str]:
            running = asyncio.ensure_future(work.run(lambda: release.wait(WAIT_S) and "first"))
            waiting = asyncio.ensure_future(work.run(lambda: "second"))
            await asyncio.sleep(0)
            with pytest.raises(ThrottledError):
                await work.run(lambda: "third")  # never runs: nothing piles up
            release.set()
            served = [await running, await waiting]
            return [*served, await work.run(lambda: "after")]

        try:
            assert asyncio.run(scenario()) == ["first", "second", "after"]
        finally:
            work.close()
