"""Sign-up follows the admin's policy: closed by default, open, or by single-use invite."""

from __future__ import annotations

import pytest

from backend.accounts import MAX_INVITE_TTL_S
from backend.errors import (
    InvalidInputError,
    InvalidInviteError,
    SignupRefusedError,
    UsernameTakenError,
)
from tests.accounts.conftest import PASSWORD, raw_rows


class TestPolicy:
    def test_sign_up_is_closed_by_default(self, accounts, admin):
        assert accounts.signup_policy() == "closed"
        with pytest.raises(SignupRefusedError, match="closed"):
            accounts.sign_up("newcomer", PASSWORD)
        assert accounts.user_by_username("newcomer") is None

    def test_when_closed_an_invite_does_not_open_it(self, accounts, admin):
        invite = accounts.create_invite(admin.id)
        with pytest.raises(SignupRefusedError):
            accounts.sign_up("newcomer", PASSWORD, invite=invite.token)

    def test_open_sign_up_creates_a_plain_user_and_signs_them_in(self, accounts, admin):
        accounts.set_signup_policy(admin.id, "open")
        signed_in = accounts.sign_up("Newcomer", PASSWORD)
        assert signed_in.user.role == "user"
        assert accounts.resolve(signed_in.token) == signed_in.user

    def test_a_taken_username_is_refused(self, accounts, admin, alice):
        accounts.set_signup_policy(admin.id, "open")
        with pytest.raises(UsernameTakenError):
            accounts.sign_up("ALICE", PASSWORD)

    def test_an_unknown_policy_is_refused(self, accounts, admin):
        with pytest.raises(InvalidInputError):
            accounts.set_signup_policy(admin.id, "sometimes")


class TestInvites:
    @pytest.fixture(autouse=True)
    def invite_only(self, accounts, admin):
        accounts.set_signup_policy(admin.id, "invite")

    def test_invite_policy_refuses_sign_up_without_an_invite(self, accounts):
        with pytest.raises(SignupRefusedError, match="invite"):
            accounts.sign_up("newcomer", PASSWORD)

    def test_an_invite_signs_up_one_person_once(self, accounts, admin):
        invite = accounts.create_invite(admin.id)
        assert accounts.sign_up("first", PASSWORD, invite=invite.token).user.username == "first"
        with pytest.raises(InvalidInviteError):
            accounts.sign_up("second", PASSWORD, invite=invite.token)
        assert accounts.user_by_username("second") is None
        [listed] = accounts.list_invites(admin.id)
        assert listed.used_by == accounts.user_by_username("first").id

    def test_an_expired_invite_is_refused(self, accounts, admin, clock):
        invite = accounts.create_invite(admin.id, ttl_s=60)
        clock.advance_s(61)
        with pytest.raises(InvalidInviteError):
            accounts.sign_up("late", PASSWORD, invite=invite.token)

    def test_a_revoked_invite_is_refused(self, accounts, admin):
        invite = accounts.create_invite(admin.id)
        assert accounts.revoke_invite(admin.id, invite.id)
        assert not accounts.revoke_invite(admin.id, invite.id)
        with pytest.raises(InvalidInviteError):
            accounts.sign_up("newcomer", PASSWORD, invite=invite.token)

    def test_a_made_up_used_or_missing_invite_hashes_nothing(self, accounts, admin, hashes):
        # Issue 27, hole 4: the password was hashed before the invite was looked at.
        invite = accounts.create_invite(admin.id)
        accounts.sign_up("first", PASSWORD, invite=invite.token)
        assert len(hashes) == 1
        for token in ("made-up", invite.token, None):
            with pytest.raises((InvalidInviteError, SignupRefusedError)):
                accounts.sign_up("second", PASSWORD, invite=token)
        assert len(hashes) == 1

    def test_a_made_up_invite_is_refused_and_leaves_no_account(self, accounts):
        with pytest.raises(InvalidInviteError):
            accounts.sign_up("newcomer", PASSWORD, invite="made-up")
        assert accounts.user_by_username("newcomer") is None

    def test_only_the_invite_tokens_hash_is_stored(self, accounts, admin):
        invite = accounts.create_invite(admin.id)
        assert invite.token not in repr(raw_rows(accounts, "SELECT * FROM invites"))

    def test_an_invite_lifetime_is_bounded(self, accounts, admin):
        with pytest.raises(InvalidInputError):
            accounts.create_invite(admin.id, ttl_s=MAX_INVITE_TTL_S + 1)
        with pytest.raises(InvalidInputError):
            accounts.create_invite(admin.id, ttl_s=0)
