"""The public surface of backend.accounts and backend.cli is small and explicit."""

import backend.accounts
import backend.cli
from tests.support.exports import assert_public_surface


def test_backend_accounts_exports_exactly_its_public_names():
    assert_public_surface(
        backend.accounts,
        {
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
        },
    )


def test_backend_cli_exports_exactly_its_public_names():
    assert_public_surface(backend.cli, {"EXIT_OK", "EXIT_PARTIAL", "EXIT_USAGE", "cli", "main"})
