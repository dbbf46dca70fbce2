"""Who a tab is: decided on every event from what the server saw, never from the client.

The one rule (``CHATS_AUTH``, see :mod:`backend.accounts.modes`):

* ``local``: the session token is an HttpOnly cookie (:data:`SESSION_COOKIE`) that the sign-in
  route set. Page scripts cannot read it; the browser sends it with the websocket handshake,
  and Reflex keeps handshake headers on the server only (``router.headers.cookie`` is never
  serialised to the frontend). :meth:`backend.accounts.Accounts.resolve` maps it to a user.
* ``header``: a trusted proxy names the person; honoured only from ``CHATS_TRUSTED_PROXIES``.
  The peer address is the socket's own (Reflex takes it from the ASGI scope, not the client).
* ``none``: the single local user ``CHATS_USER`` (the server listens on loopback only).

Nothing a client sends (event arguments, URL, query, storage, state setters) takes part: the
cookie and the peer address come from the connection. :mod:`chatsapp.auth.guard` calls
:func:`identify` once per event and publishes the result for that event only
(:func:`current_viewer`), so handlers never cache who is asking.

Shared-state tokens are derived from ids the server checked (``user-<id>``, ``conv-<chat>``,
``solo-<tab>``): a user id is lowercase letters, digits and dashes (Reflex reserves ``_`` in
tokens).
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Mapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs

from backend.accounts import User, validate_user_id
from backend.errors import AuthError, ChatsError
from chatsapp.services import services

SESSION_COOKIE = "chats_session"
# What a browser makes for a tab's client token (a UUID). Shared states live under other
# tokens (``user-…``, ``conv-…``, ``solo-…``): a client naming one must never be served it as
# its own tab.
_BROWSER_TOKEN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True, slots=True)
class Viewer:
    """The person behind one event. ``session_token`` is empty outside ``local`` mode."""

    user_id: str
    username: str
    is_admin: bool
    session_token: str = ""


class SignedOutError(ChatsError):
    """An event that needs a signed-in person arrived without one (the guard redirects)."""

    def __init__(self) -> None:
        super().__init__("You are signed out. Sign in again to go on.")


_viewer: contextvars.ContextVar[Viewer | None] = contextvars.ContextVar("viewer", default=None)


def session_token(cookie_header: str) -> str:
    """The session token in a ``Cookie`` header, or ``""``."""
    if not cookie_header:
        return ""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return ""
    morsel = jar.get(SESSION_COOKIE)
    return morsel.value if morsel is not None else ""


def identify(headers: Mapping[str, str], client_ip: str) -> Viewer | None:
    """The viewer of a connection with these handshake ``headers`` and peer ``client_ip``."""
    settings = services().settings
    if settings.auth_mode == "none":
        return Viewer(validate_user_id(settings.user_id), settings.user_id, True)
    accounts = services().accounts()
    if settings.auth_mode == "header":
        try:
            user = accounts.identity_from_headers(headers, client_ip)
        except AuthError:
            return None
        return _viewer_of(user, "")
    token = session_token(str(headers.get("cookie", "")))
    signed_in = accounts.resolve(token) if token else None
    return _viewer_of(signed_in, token) if signed_in is not None else None


def _viewer_of(user: User, token: str) -> Viewer:
    return Viewer(user.id, user.username, user.is_admin, token)


def publish_viewer(viewer: Viewer | None) -> contextvars.Token[Viewer | None]:
    return _viewer.set(viewer)


def peek_viewer() -> Viewer | None:
    """The viewer of the event being handled, if someone is signed in (public pages)."""
    return _viewer.get()


def current_viewer() -> Viewer:
    """The signed-in person of the event being handled; :class:`SignedOutError` if none."""
    viewer = _viewer.get()
    if viewer is None:
        raise SignedOutError()
    return viewer


def current_user_id() -> str:
    return current_viewer().user_id


def connect_token(environ: Mapping[str, object]) -> str:
    """The client token a socket asked for in its connect URL (``""`` if none)."""
    return (parse_qs(str(environ.get("QUERY_STRING", ""))).get("token") or [""])[0]


def is_browser_token(client_token: str) -> bool:
    return _BROWSER_TOKEN.fullmatch(client_token) is not None


def may_use_tab(owner: str, viewer_id: str) -> bool:
    """Whether ``viewer_id`` ("" = signed out) may use a tab whose state is bound to ``owner``.

    A tab's state belongs to the first person it served ("" = nobody yet): only that person
    may use it again, by an event or by a socket connecting with its client token.
    """
    return not owner or owner == viewer_id


def directory_token(user_id: str) -> str:
    return f"user-{user_id}"


def conversation_token(chat_id: str) -> str:
    return _token("conv", chat_id)


def solo_token(client_token: str) -> str:
    """A token of one tab alone, which nothing writes: where its chat views are linked while
    they show no chat (the chat it showed before it opens another, or one it lost). One token
    for every such tab made each of their events wait for one lock; see
    :mod:`chatsapp.states.chat_views` for why a tab's views leave one chat before another."""
    return _token("solo", client_token)


def _token(kind: str, name: str) -> str:
    # Tokens may not contain "_": the rare name that does is hex-encoded behind an "x", and so
    # is a name starting with "x", so a plain name never reads as an encoded one.
    plain = "_" not in name and not name.startswith("x")
    return f"{kind}-{name}" if plain else f"{kind}-x{name.encode().hex()}"
