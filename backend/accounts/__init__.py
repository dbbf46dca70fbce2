"""Accounts for a multi-user server: who a tab is, sign-ins, admin, auth modes.

``Accounts(settings)`` opens ``<data_dir>/accounts.sqlite`` (safe with several processes on
one data folder). Read :mod:`backend.accounts.service` for what the UI must call on every
event, :mod:`backend.accounts.modes` for ``CHATS_AUTH=header|none``, and
:mod:`backend.accounts.adoption` for how the first admin keeps the former local user's chats.
"""

from backend.accounts.admin import CONSOLE_ACTOR, ROLES
from backend.accounts.lifetimes import DEFAULT_INVITE_TTL_S, MAX_INVITE_TTL_S
from backend.accounts.modes import (
    check_listen_address,
    check_startup,
    client_address,
    header_username,
)
from backend.accounts.names import USER_ID_PATTERN, normalize_username, validate_user_id
from backend.accounts.passwords import MAX_PASSWORD_BYTES, MIN_PASSWORD_CHARS
from backend.accounts.service import Accounts
from backend.accounts.throttle import (
    FAILURE_WINDOW_S,
    MAX_FAILURES_PER_ACCOUNT,
    MAX_FAILURES_PER_ADDRESS,
)
from backend.accounts.values import (
    DEFAULT_SIGNUP_POLICY,
    SIGNUP_POLICIES,
    AccountChange,
    AccountChanges,
    Invite,
    NewInvite,
    Role,
    SignedIn,
    SignupPolicy,
    User,
)
from backend.data_folder import ACCOUNTS_FILE

__all__ = [
    "ACCOUNTS_FILE",
    "CONSOLE_ACTOR",
    "DEFAULT_INVITE_TTL_S",
    "DEFAULT_SIGNUP_POLICY",
    "FAILURE_WINDOW_S",
    "MAX_FAILURES_PER_ACCOUNT",
    "MAX_FAILURES_PER_ADDRESS",
    "MAX_INVITE_TTL_S",
    "MAX_PASSWORD_BYTES",
    "MIN_PASSWORD_CHARS",
    "ROLES",
    "SIGNUP_POLICIES",
    "USER_ID_PATTERN",
    "AccountChange",
    "AccountChanges",
    "Accounts",
    "Invite",
    "NewInvite",
    "Role",
    "SignedIn",
    "SignupPolicy",
    "User",
    "check_listen_address",
    "check_startup",
    "client_address",
    "header_username",
    "normalize_username",
    "validate_user_id",
]
