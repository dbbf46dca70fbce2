"""What only an admin may do: manage accounts, the sign-up policy and invites.

Every operation takes the acting user's id and checks, inside the operation's own write
transaction, that this user is an admin and enabled *now* (a role is never taken from a cache:
a demoted or disabled admin is refused at their next call). :data:`CONSOLE_ACTOR` stands for
whoever runs the ``chats`` CLI on the server: they can read and write the data folder anyway,
like the owner who reads the setup code off the console. It contains ``@``, which no user id
can, so it can never name an account; the UI must only ever pass a resolved user's id.

Disabling a user or resetting their password ends all their sign-ins and tells the change
feed, so their open tabs are signed out live. The last active admin cannot be disabled.
"""

from __future__ import annotations

from backend.accounts import lifetimes
from backend.accounts.core import AccountsCore
from backend.accounts.names import normalize_username
from backend.accounts.store import SIGNUP_POLICY_KEY
from backend.accounts.tokens import hash_secret, new_token
from backend.accounts.values import (
    SIGNUP_POLICIES,
    Invite,
    NewInvite,
    Role,
    SignupPolicy,
    User,
)
from backend.errors import (
    InvalidInputError,
    LastAdminError,
    PermissionDeniedError,
    UserNotFoundError,
)

CONSOLE_ACTOR = "@console"
ROLES: tuple[Role, ...] = ("admin", "user")
_INVITE_ID_BYTES = 8


class AdminOperations(AccountsCore):
    """Admin-only operations (see the module docstring)."""

    def create_user(self, actor_id: str, username: str, password: str, role: Role = "user") -> User:
        """A new account with a password. The first admin adopts the former local user's
        directory (:mod:`backend.accounts.adoption`)."""
        _check_role(role)
        name = normalize_username(username)
        password_hash = self._hash_new_password(password)
        with self._db.transaction():
            self._require_admin(actor_id, "create accounts")
            return self._insert_user(name, role, password_hash)

    def list_users(self, actor_id: str) -> list[User]:
        """Every account, disabled ones too, by username."""
        with self._db.transaction():
            self._require_admin(actor_id, "list accounts")
            return self._store.list_users()

    def user(self, user_id: str) -> User | None:
        return self._store.user_by_id(user_id)

    def user_by_username(self, username: str) -> User | None:
        """Look an account up by what a person types (for the CLI and admin pages)."""
        return self._store.user_by_username(normalize_username(username))

    def disable_user(self, actor_id: str, user_id: str) -> User:
        """Disable an account and end its sign-ins; its open tabs sign out live."""
        with self._db.transaction():
            self._require_admin(actor_id, "disable accounts")
            user = self._target(user_id)
            if user.is_admin and self._store.count_active_admins() <= 1:
                raise LastAdminError(user_id)
            if not user.disabled:
                self._store.set_disabled(user_id, self._now_ms(), self._now_ms())
            self._end_sign_ins(user_id, "disabled")
            return self._target(user_id)

    def enable_user(self, actor_id: str, user_id: str) -> User:
        with self._db.transaction():
            self._require_admin(actor_id, "enable accounts")
            user = self._target(user_id)
            if user.disabled:
                self._store.set_disabled(user_id, None, self._now_ms())
                self._store.append_event(user_id, "enabled", self._now_ms())
            return self._target(user_id)

    def set_role(self, actor_id: str, user_id: str, role: Role) -> User:
        """Promote or demote. Takes effect at the person's next event (roles are never
        cached); the change feed tells their tabs to re-resolve now."""
        _check_role(role)
        with self._db.transaction():
            self._require_admin(actor_id, "change roles")
            user = self._target(user_id)
            if user.role == role:
                return user
            if user.is_admin and self._store.count_active_admins() <= 1:
                raise LastAdminError(user_id)
            self._store.set_role(user_id, role, self._now_ms())
            self._store.append_event(user_id, "role_changed", self._now_ms())
            return self._target(user_id)

    def reset_password(self, actor_id: str, user_id: str, new_password: str) -> User:
        """Set someone's password (they forgot it); all their sign-ins end."""
        password_hash = self._hash_new_password(new_password)
        with self._db.transaction():
            self._require_admin(actor_id, "reset passwords")
            self._target(user_id)
            self._store.set_password(user_id, password_hash, self._now_ms())
            self._end_sign_ins(user_id, "password_changed")
            return self._target(user_id)

    def set_signup_policy(self, actor_id: str, policy: SignupPolicy) -> None:
        if policy not in SIGNUP_POLICIES:
            raise InvalidInputError(
                f"a sign-up policy is one of {', '.join(SIGNUP_POLICIES)}, not {policy!r}"
            )
        with self._db.transaction():
            self._require_admin(actor_id, "change the sign-up policy")
            self._store.put_setting(SIGNUP_POLICY_KEY, policy)

    def create_invite(
        self, actor_id: str, ttl_s: int = lifetimes.DEFAULT_INVITE_TTL_S
    ) -> NewInvite:
        """A single-use invite; put ``token`` in the link. Honoured under the ``invite``
        policy until it is used, revoked or expired."""
        if not 0 < ttl_s <= lifetimes.MAX_INVITE_TTL_S:
            raise InvalidInputError(
                f"an invite lives 1 to {lifetimes.MAX_INVITE_TTL_S} seconds, not {ttl_s}"
            )
        token = new_token()
        invite_id = new_token()[: _INVITE_ID_BYTES * 2]
        with self._db.transaction():
            self._require_admin(actor_id, "invite people")
            now = self._now_ms()
            expires_at = lifetimes.expires_at(now, ttl_s)
            self._store.insert_invite(invite_id, hash_secret(token), actor_id, now, expires_at)
        return NewInvite(id=invite_id, token=token, expires_at=expires_at)

    def list_invites(self, actor_id: str) -> list[Invite]:
        with self._db.transaction():
            self._require_admin(actor_id, "list invites")
            return self._store.list_invites()

    def revoke_invite(self, actor_id: str, invite_id: str) -> bool:
        """Revoke an unused invite; False if it was revoked already or never existed."""
        with self._db.transaction():
            self._require_admin(actor_id, "revoke invites")
            return self._store.revoke_invite(invite_id, self._now_ms())

    # ── internals ───────────────────────────────────────────────────

    def _require_admin(self, actor_id: str, action: str) -> None:
        """In the operation's transaction: the actor is an enabled admin right now."""
        if actor_id == CONSOLE_ACTOR:
            return
        actor = self._store.user_by_id(actor_id) if isinstance(actor_id, str) else None
        if actor is None or not actor.is_admin:
            raise PermissionDeniedError(action)

    def _target(self, user_id: str) -> User:
        user = self._store.user_by_id(user_id)
        if user is None:
            raise UserNotFoundError(user_id)
        return user


def _check_role(role: object) -> None:
    if role not in ROLES:
        raise InvalidInputError(f"a role is one of {', '.join(ROLES)}, not {role!r}")
