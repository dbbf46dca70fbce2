"""People signed in for the tests of the app's HTTP routes: an account created on first use,
its session token, and the cookie a browser would send with it."""

from __future__ import annotations

from backend.accounts import CONSOLE_ACTOR
from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.services import Services

PASSWORD = "correct horse battery staple"


def sign_in(made: Services, username: str) -> tuple[str, str]:
    """(user id, session token) of ``username``, created on first use."""
    accounts = made.accounts()
    if accounts.user_by_username(username) is None:
        accounts.create_user(CONSOLE_ACTOR, username, PASSWORD, "user")
    signed = accounts.sign_in(username, PASSWORD, "127.0.0.1")
    return signed.user.id, signed.token


def session_cookie(token: str) -> dict[str, str]:
    return {"cookie": f"{SESSION_COOKIE}={token}"}
