"""Sign-in: one answer for every wrong reason (no user enumeration), the same work for each,
and throttling per account and per address with a "try again in" sentence."""

from __future__ import annotations

import argon2
import pytest

from backend.accounts import (
    FAILURE_WINDOW_S,
    MAX_FAILURES_PER_ACCOUNT,
    MAX_FAILURES_PER_ADDRESS,
)
from backend.accounts.throttle import address_key, retry_after_s
from backend.errors import InvalidCredentialsError, ThrottledError
from tests.accounts.conftest import ADDRESS, PASSWORD

WRONG = "definitely not it"


def refusal(accounts, username: str, password: str, address: str = ADDRESS) -> Exception:
    with pytest.raises((InvalidCredentialsError, ThrottledError)) as caught:
        accounts.sign_in(username, password, address)
    return caught.value


class TestNoUserEnumeration:
    def test_unknown_user_wrong_password_and_disabled_account_read_the_same(
        self, accounts, admin, alice
    ):
        accounts.create_user(admin.id, "carol", PASSWORD)
        accounts.disable_user(admin.id, accounts.user_by_username("carol").id)
        texts = {
            str(refusal(accounts, "nobody-here", PASSWORD, "198.51.100.1")),
            str(refusal(accounts, "alice", WRONG, "198.51.100.2")),
            str(refusal(accounts, "carol", PASSWORD, "198.51.100.3")),
            str(refusal(accounts, "not a valid name!", PASSWORD, "198.51.100.4")),
        }
        assert texts == {InvalidCredentialsError.MESSAGE}

    @pytest.mark.parametrize(
        ("username", "password"),
        [("nobody-here", PASSWORD), ("alice", WRONG), ("not a valid name!", PASSWORD)],
    )
    def test_every_refusal_costs_exactly_one_argon2_verification(
        self, accounts, alice, monkeypatch, username, password
    ):
        calls = []
        real_verify = argon2.PasswordHasher.verify

        def counting_verify(self, stored, given):
            calls.append(stored)
            return real_verify(self, stored, given)

        monkeypatch.setattr(argon2.PasswordHasher, "verify", counting_verify)
        refusal(accounts, username, password)
        assert len(calls) == 1
        assert calls[0].startswith("$argon2id$")  # the dummy hash has the real parameters

    def test_usernames_are_case_insensitive(self, accounts, alice):
        assert accounts.sign_in("  ALICE ", PASSWORD, ADDRESS).user.id == alice.id


class TestThrottlingPerAccount:
    def fail(self, accounts, username: str, times: int, address: str = ADDRESS) -> None:
        for _ in range(times):
            assert isinstance(refusal(accounts, username, WRONG, address), InvalidCredentialsError)

    def test_after_the_limit_even_the_right_password_waits_with_a_try_again_sentence(
        self, accounts, alice
    ):
        self.fail(accounts, "alice", MAX_FAILURES_PER_ACCOUNT)
        error = refusal(accounts, "alice", PASSWORD, "203.0.113.9")
        assert isinstance(error, ThrottledError)
        assert error.retry_after_s == FAILURE_WINDOW_S
        assert str(error) == f"Too many attempts. Try again in {FAILURE_WINDOW_S} seconds."

    def test_the_wait_counts_down_and_then_sign_in_works(self, accounts, alice, clock):
        self.fail(accounts, "alice", MAX_FAILURES_PER_ACCOUNT)
        clock.advance_s(FAILURE_WINDOW_S - 60)
        assert refusal(accounts, "alice", PASSWORD).retry_after_s == 60
        clock.advance_s(60)
        assert accounts.sign_in("alice", PASSWORD, ADDRESS).user.id == alice.id

    def test_unknown_accounts_are_throttled_exactly_like_real_ones(self, accounts, alice):
        self.fail(accounts, "ghost", MAX_FAILURES_PER_ACCOUNT)
        self.fail(accounts, "alice", MAX_FAILURES_PER_ACCOUNT, "198.51.100.77")
        ghost = refusal(accounts, "ghost", WRONG, "203.0.113.1")
        real = refusal(accounts, "alice", WRONG, "203.0.113.2")
        assert str(ghost) == str(real)

    def test_a_success_clears_the_accounts_earlier_failures(self, accounts, alice):
        self.fail(accounts, "alice", MAX_FAILURES_PER_ACCOUNT - 1)
        accounts.sign_in("alice", PASSWORD, ADDRESS)
        self.fail(accounts, "alice", MAX_FAILURES_PER_ACCOUNT - 1)
        assert accounts.sign_in("alice", PASSWORD, ADDRESS)

    def test_another_account_is_not_affected(self, accounts, admin, alice):
        self.fail(accounts, "alice", MAX_FAILURES_PER_ACCOUNT, "198.51.100.5")
        assert accounts.sign_in("root-admin", PASSWORD, ADDRESS).user.id == admin.id

    def test_wrong_old_passwords_in_a_password_change_count_too(self, accounts, alice):
        for _ in range(MAX_FAILURES_PER_ACCOUNT):
            with pytest.raises(InvalidCredentialsError):
                accounts.change_password(alice.id, WRONG, "a brand new passphrase")
        with pytest.raises(ThrottledError):
            accounts.change_password(alice.id, PASSWORD, "a brand new passphrase")


class TestThrottlingPerAddress:
    def test_one_address_guessing_many_accounts_is_stopped(self, accounts, alice):
        for n in range(MAX_FAILURES_PER_ADDRESS):
            refusal(accounts, f"user{n}", WRONG)
        error = refusal(accounts, "alice", PASSWORD)
        assert isinstance(error, ThrottledError)
        assert "Try again in" in str(error)

    def test_another_address_can_still_sign_in(self, accounts, alice):
        for n in range(MAX_FAILURES_PER_ADDRESS):
            refusal(accounts, f"user{n}", WRONG)
        assert accounts.sign_in("alice", PASSWORD, "198.51.100.200").user.id == alice.id

    def test_an_ipv6_host_cannot_escape_by_rotating_through_its_prefix(self, accounts, alice):
        for n in range(MAX_FAILURES_PER_ADDRESS):
            refusal(accounts, f"user{n}", WRONG, f"2001:db8:1:2::{n + 1:x}")
        error = refusal(accounts, "alice", PASSWORD, "2001:db8:1:2:ffff::1")
        assert isinstance(error, ThrottledError)

    def test_an_ipv4_peer_reported_as_mapped_ipv6_is_the_same_address(self):
        assert address_key("::ffff:192.0.2.1") == address_key("192.0.2.1") == "192.0.2.1"


class TestRetryAfter:
    def test_below_the_limit_there_is_no_wait(self):
        assert retry_after_s([1_000, 2_000], limit=3, now_ms=3_000, window_s=60) == 0

    def test_the_wait_ends_when_enough_failures_leave_the_window(self):
        failures = [0, 10_000, 20_000]
        assert retry_after_s(failures, limit=3, now_ms=30_000, window_s=60) == 30
        assert retry_after_s(failures, limit=2, now_ms=30_000, window_s=60) == 40

    def test_a_wait_is_never_shown_as_zero_seconds(self):
        assert retry_after_s([0], limit=1, now_ms=59_999, window_s=60) == 1


class TestThrottlingBothWays:
    def test_the_wait_shown_is_the_longer_of_the_account_and_address_waits(
        self, accounts, alice, clock
    ):
        for n in range(MAX_FAILURES_PER_ADDRESS):
            refusal(accounts, f"user{n}", WRONG)
        clock.advance_s(300)
        for n in range(MAX_FAILURES_PER_ACCOUNT):
            refusal(accounts, "alice", WRONG, f"198.51.100.{n}")
        # The address frees in 600 s, the account in 900 s: saying 600 would be a lie.
        assert refusal(accounts, "alice", PASSWORD).retry_after_s == FAILURE_WINDOW_S

    def test_a_password_change_without_an_address_shares_no_bucket_with_others(
        self, accounts, admin
    ):
        people = [accounts.create_user(admin.id, f"person{n}", PASSWORD) for n in range(6)]
        for person in people:  # 24 wrong guesses in all, none from a known address
            for _ in range(MAX_FAILURES_PER_ACCOUNT - 1):
                with pytest.raises(InvalidCredentialsError):
                    accounts.change_password(person.id, WRONG, "a brand new passphrase")
        accounts.change_password(admin.id, PASSWORD, "a brand new passphrase")
