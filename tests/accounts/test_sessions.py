"""Sessions: random tokens stored only as hashes, sliding expiry, and sign-out that ends
exactly the sessions it should."""

from __future__ import annotations

import hashlib

import pytest

from backend.accounts import CONSOLE_ACTOR
from backend.errors import InvalidCredentialsError
from tests.accounts.conftest import ADDRESS, PASSWORD, raw_rows

DAY_S = 24 * 3600
NEW_PASSWORD = "a brand new passphrase"


class TestTokensAreStoredOnlyAsHashes:
    def test_the_sessions_table_holds_the_sha256_of_the_token_and_not_the_token(
        self, accounts, alice
    ):
        signed_in = accounts.sign_in("alice", PASSWORD, ADDRESS)
        rows = raw_rows(accounts, "SELECT * FROM sessions")
        assert len(rows) == 1
        assert signed_in.token not in repr(rows)
        assert rows[0][0] == hashlib.sha256(signed_in.token.encode()).hexdigest()

    @pytest.mark.sqlite_only
    def test_no_secret_appears_anywhere_in_the_database_file(self, accounts, admin, alice):
        signed_in = accounts.sign_in("alice", PASSWORD, ADDRESS)
        invite = accounts.create_invite(admin.id)
        content = (
            accounts.path.read_bytes()
            + accounts.path.with_name(accounts.path.name + "-wal").read_bytes()
        )
        for secret in (signed_in.token, invite.token, PASSWORD):
            assert secret.encode() not in content

    def test_every_sign_in_gets_a_different_unguessable_token(self, accounts, alice):
        tokens = {accounts.sign_in("alice", PASSWORD, ADDRESS).token for _ in range(3)}
        assert len(tokens) == 3
        assert all(len(token) >= 43 for token in tokens)  # 256 bits, URL-safe base64

    def test_an_unknown_or_malformed_token_resolves_to_nobody(self, accounts, alice):
        assert accounts.resolve("not-a-token") is None
        assert accounts.resolve("") is None
        assert accounts.resolve(None) is None
        assert accounts.resolve("x" * 10_000) is None


class TestExpiryAndRenewal:
    def test_a_session_resolves_to_its_user_until_its_lifetime_ends(
        self, accounts, alice, clock, settings
    ):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        assert accounts.resolve(token) == alice
        clock.advance_s(settings.sign_in_ttl_s)
        assert accounts.resolve(token) is None

    def test_a_session_used_past_half_its_lifetime_is_renewed_to_a_full_lifetime(
        self, accounts, alice, clock, settings
    ):
        ttl = settings.sign_in_ttl_s
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        clock.advance_s(ttl * 0.75)
        assert accounts.resolve(token) == alice
        [(expires_at,)] = raw_rows(accounts, "SELECT expires_at FROM sessions")
        assert expires_at == clock.now + ttl * 1000
        clock.advance_s(ttl * 0.75)  # past the original expiry, within the renewed one
        assert accounts.resolve(token) == alice

    def test_a_session_used_early_is_not_rewritten(self, accounts, alice, clock, settings):
        signed_in = accounts.sign_in("alice", PASSWORD, ADDRESS)
        clock.advance_s(settings.sign_in_ttl_s * 0.25)
        accounts.resolve(signed_in.token)
        assert raw_rows(accounts, "SELECT expires_at FROM sessions") == [(signed_in.expires_at,)]

    def test_an_unused_session_expires_even_if_another_of_the_user_is_active(
        self, accounts, alice, clock, settings
    ):
        idle = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        active = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        for _ in range(4):
            clock.advance_s(settings.sign_in_ttl_s * 0.3)
            assert accounts.resolve(active) == alice
        assert accounts.resolve(idle) is None

    def test_the_lifetime_comes_from_the_setting(self, data_dir, clock):
        from backend.accounts import Accounts
        from tests.accounts.conftest import make_settings

        with Accounts(make_settings(data_dir, sign_in_ttl_s=60), clock=clock) as accounts:
            accounts.create_user(CONSOLE_ACTOR, "alice", PASSWORD)
            token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
            clock.advance_s(59)
            assert accounts.resolve(token) is not None
            clock.advance_s(61)
            assert accounts.resolve(token) is None


class TestSignOut:
    def test_signing_out_ends_that_session_only(self, accounts, alice):
        laptop = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        phone = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.sign_out(laptop)
        assert accounts.resolve(laptop) is None
        assert accounts.resolve(phone) == alice

    def test_signing_out_twice_or_with_garbage_is_harmless(self, accounts, alice):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.sign_out(token)
        accounts.sign_out(token)
        accounts.sign_out("garbage")

    def test_signing_out_everywhere_ends_every_other_session_and_keeps_this_one(
        self, accounts, alice, admin
    ):
        here = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        others = [accounts.sign_in("alice", PASSWORD, ADDRESS).token for _ in range(2)]
        admins = accounts.sign_in("root-admin", PASSWORD, ADDRESS).token
        assert accounts.sign_out_everywhere(alice.id, keep_token=here) == 2
        assert accounts.resolve(here) == alice
        assert [accounts.resolve(token) for token in others] == [None, None]
        assert accounts.resolve(admins) == admin  # another person's session is untouched

    def test_signing_out_everywhere_without_a_token_to_keep_ends_all(self, accounts, alice):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.sign_out_everywhere(alice.id)
        assert accounts.resolve(token) is None


class TestPasswordChange:
    def test_changing_the_password_ends_the_other_sessions_and_keeps_this_one(
        self, accounts, alice
    ):
        here = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        other = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.change_password(alice.id, PASSWORD, NEW_PASSWORD, keep_token=here)
        assert accounts.resolve(here) is not None
        assert accounts.resolve(other) is None

    def test_after_a_change_only_the_new_password_signs_in(self, accounts, alice):
        accounts.change_password(alice.id, PASSWORD, NEW_PASSWORD)
        with pytest.raises(InvalidCredentialsError):
            accounts.sign_in("alice", PASSWORD, ADDRESS)
        assert accounts.sign_in("alice", NEW_PASSWORD, ADDRESS).user.id == alice.id
        assert accounts.user(alice.id).password_changed_at is not None

    def test_a_wrong_old_password_changes_nothing(self, accounts, alice):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        with pytest.raises(InvalidCredentialsError):
            accounts.change_password(alice.id, "not the password", NEW_PASSWORD)
        assert accounts.resolve(token) == alice
        assert accounts.sign_in("alice", PASSWORD, ADDRESS)


class TestDisabledUsers:
    def test_a_disabled_users_sessions_no_longer_resolve(self, accounts, admin, alice):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.disable_user(admin.id, alice.id)
        assert accounts.resolve(token) is None
        assert raw_rows(accounts, f"SELECT * FROM sessions WHERE user_id = '{alice.id}'") == []

    def test_a_session_left_behind_by_a_direct_database_write_still_does_not_resolve(
        self, accounts, alice
    ):
        # Disabling through the service deletes the sessions; resolve checks the flag too, so a
        # restored backup or a hand edit that only sets disabled_at cannot leave anyone in.
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        raw_rows(accounts, "UPDATE users SET disabled_at = 1 WHERE username = 'alice'")
        assert accounts.resolve(token) is None

    def test_re_enabling_lets_them_sign_in_again_but_does_not_revive_old_sessions(
        self, accounts, admin, alice
    ):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.disable_user(admin.id, alice.id)
        accounts.enable_user(admin.id, alice.id)
        assert accounts.resolve(token) is None
        assert accounts.sign_in("alice", PASSWORD, ADDRESS).user.id == alice.id
