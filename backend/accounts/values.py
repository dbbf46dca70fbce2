"""The values the accounts service hands out. Frozen pydantic models (SQLModel classes
without a table, as in :mod:`backend.chats.values`: the SQL goes through
:class:`backend.storage.Database`; see :mod:`backend.accounts.store` for why).

None of them carries a password hash or a token hash. The only secrets that ever leave the
service are the plain sign-in token in :class:`SignedIn` and the plain invite token in
:class:`NewInvite`, each handed out once, at creation.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from sqlmodel import SQLModel

Role = Literal["admin", "user"]
SignupPolicy = Literal["open", "invite", "closed"]
SIGNUP_POLICIES: tuple[SignupPolicy, ...] = ("open", "invite", "closed")
DEFAULT_SIGNUP_POLICY: SignupPolicy = "closed"
AccountChangeKind = Literal[
    "signed_out", "signed_out_everywhere", "password_changed", "disabled", "enabled", "role_changed"
]


class User(SQLModel):
    """One account. ``id`` names the person's directory; timestamps are integer ms."""

    model_config = ConfigDict(frozen=True)

    id: str
    username: str
    role: Role
    disabled: bool
    has_password: bool  # False for accounts a trusted proxy provisioned
    created_at: int
    updated_at: int
    password_changed_at: int | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin" and not self.disabled


class SignedIn(SQLModel):
    """A new sign-in: give ``token`` to the browser (an HttpOnly cookie); it is not kept."""

    model_config = ConfigDict(frozen=True)

    token: str
    user: User
    expires_at: int


class NewInvite(SQLModel):
    """A new invite: ``token`` goes into the link; only its hash is kept."""

    model_config = ConfigDict(frozen=True)

    id: str
    token: str
    expires_at: int


class Invite(SQLModel):
    """An invite as an admin lists it (no token: it was shown once, at creation)."""

    model_config = ConfigDict(frozen=True)

    id: str
    created_by: str
    created_at: int
    expires_at: int
    used_at: int | None = None
    used_by: str | None = None
    revoked: bool = False


class AccountChange(SQLModel):
    """One entry of the change feed: something that may end sign-ins of ``user_id``."""

    model_config = ConfigDict(frozen=True)

    seq: int
    user_id: str
    kind: AccountChangeKind
    at: int


class AccountChanges(SQLModel):
    """What ``Accounts.changes_since`` returns: pass ``cursor`` to the next call."""

    model_config = ConfigDict(frozen=True)

    cursor: int
    changes: tuple[AccountChange, ...] = ()
    # True when the reader was so far behind that entries were pruned: re-check every tab.
    gap: bool = False

    @property
    def user_ids(self) -> frozenset[str]:
        return frozenset(change.user_id for change in self.changes)
