"""Admin operations: only an enabled admin, checked at each call; what each one ends."""

from __future__ import annotations

import pytest

from backend.accounts import CONSOLE_ACTOR
from backend.errors import (
    InvalidInputError,
    InvalidUsernameError,
    LastAdminError,
    PermissionDeniedError,
    UsernameTakenError,
    UserNotFoundError,
)
from tests.accounts.conftest import ADDRESS, PASSWORD

NEW_PASSWORD = "a brand new passphrase"

ADMIN_OPERATIONS = {
    "create_user": lambda accounts, actor, target: accounts.create_user(actor, "eve", PASSWORD),
    "list_users": lambda accounts, actor, target: accounts.list_users(actor),
    "disable_user": lambda accounts, actor, target: accounts.disable_user(actor, target),
    "enable_user": lambda accounts, actor, target: accounts.enable_user(actor, target),
    "reset_password": lambda accounts, actor, target: accounts.reset_password(
        actor, target, NEW_PASSWORD
    ),
    "set_signup_policy": lambda accounts, actor, target: accounts.set_signup_policy(actor, "open"),
    "set_role": lambda accounts, actor, target: accounts.set_role(actor, target, "admin"),
    "create_invite": lambda accounts, actor, target: accounts.create_invite(actor),
    "list_invites": lambda accounts, actor, target: accounts.list_invites(actor),
    "revoke_invite": lambda accounts, actor, target: accounts.revoke_invite(actor, "x"),
}


class TestAdminOnly:
    @pytest.mark.parametrize("operation", sorted(ADMIN_OPERATIONS))
    def test_a_plain_user_is_refused_and_nothing_changes(self, accounts, admin, alice, operation):
        bob = accounts.create_user(admin.id, "bob", PASSWORD)
        before = accounts.list_users(admin.id)
        with pytest.raises(PermissionDeniedError, match="Only an admin can"):
            ADMIN_OPERATIONS[operation](accounts, alice.id, bob.id)
        assert accounts.list_users(admin.id) == before
        assert accounts.signup_policy() == "closed"
        assert accounts.list_invites(admin.id) == []

    @pytest.mark.parametrize("actor", ["no-such-user", "", "@console "])
    def test_an_unknown_actor_is_refused(self, accounts, admin, actor):
        with pytest.raises(PermissionDeniedError):
            accounts.list_users(actor)

    def test_a_disabled_admin_is_refused_at_the_next_call(self, accounts, admin):
        other = accounts.create_user(admin.id, "other-admin", PASSWORD, role="admin")
        accounts.disable_user(admin.id, other.id)
        with pytest.raises(PermissionDeniedError):
            accounts.list_users(other.id)

    def test_the_console_may_do_everything(self, accounts, alice):
        assert [user.username for user in accounts.list_users(CONSOLE_ACTOR)] == [
            "alice",
            "root-admin",
        ]


class TestManagingUsers:
    def test_creating_a_user_gives_a_normalised_unique_username(self, accounts, admin):
        user = accounts.create_user(admin.id, "  Bob.Smith@Example.com ", PASSWORD)
        assert user.username == "bob.smith@example.com"
        assert (user.role, user.disabled, user.has_password) == ("user", False, True)
        with pytest.raises(UsernameTakenError):
            accounts.create_user(admin.id, "BOB.SMITH@example.COM", PASSWORD)

    @pytest.mark.parametrize("username", ["", "   ", "a b", "../etc", "-x", "x" * 65, "ünï"])
    def test_a_username_outside_the_rules_is_refused(self, accounts, admin, username):
        with pytest.raises(InvalidUsernameError):
            accounts.create_user(admin.id, username, PASSWORD)

    def test_an_unknown_role_is_refused(self, accounts, admin):
        with pytest.raises(InvalidInputError):
            accounts.create_user(admin.id, "bob", PASSWORD, role="root")

    def test_disabling_ends_every_session_and_lists_the_user_as_disabled(
        self, accounts, admin, alice
    ):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        disabled = accounts.disable_user(admin.id, alice.id)
        assert disabled.disabled
        assert accounts.resolve(token) is None
        assert [u.disabled for u in accounts.list_users(admin.id) if u.id == alice.id] == [True]

    def test_the_last_active_admin_cannot_be_disabled(self, accounts, admin):
        with pytest.raises(LastAdminError):
            accounts.disable_user(admin.id, admin.id)
        other = accounts.create_user(admin.id, "other-admin", PASSWORD, role="admin")
        accounts.disable_user(other.id, admin.id)
        assert accounts.user(admin.id).disabled

    def test_resetting_a_password_ends_their_sessions_and_sets_the_new_one(
        self, accounts, admin, alice
    ):
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.reset_password(admin.id, alice.id, NEW_PASSWORD)
        assert accounts.resolve(token) is None
        assert accounts.sign_in("alice", NEW_PASSWORD, ADDRESS).user.id == alice.id

    def test_a_demoted_admin_loses_admin_rights_at_their_next_call(self, accounts, admin):
        other = accounts.create_user(admin.id, "other-admin", PASSWORD, role="admin")
        token = accounts.sign_in("other-admin", PASSWORD, ADDRESS).token
        cursor = accounts.change_cursor()
        accounts.set_role(admin.id, other.id, "user")
        assert not accounts.resolve(token).is_admin  # the session stays; the role does not
        with pytest.raises(PermissionDeniedError):
            accounts.list_users(other.id)
        assert [c.kind for c in accounts.changes_since(cursor).changes] == ["role_changed"]

    def test_the_last_active_admin_cannot_be_demoted(self, accounts, admin):
        with pytest.raises(LastAdminError):
            accounts.set_role(admin.id, admin.id, "user")
        assert accounts.user(admin.id).role == "admin"

    def test_operating_on_an_unknown_user_is_not_found(self, accounts, admin):
        with pytest.raises(UserNotFoundError):
            accounts.disable_user(admin.id, "ghost-123456")
        with pytest.raises(UserNotFoundError):
            accounts.reset_password(admin.id, "ghost-123456", NEW_PASSWORD)

    def test_an_admins_role_is_read_fresh_on_every_call(self, accounts, admin):
        other = accounts.create_user(admin.id, "other-admin", PASSWORD, role="admin")
        token = accounts.sign_in("other-admin", PASSWORD, ADDRESS).token
        assert accounts.resolve(token).is_admin
        accounts.disable_user(admin.id, other.id)
        assert accounts.resolve(token) is None
