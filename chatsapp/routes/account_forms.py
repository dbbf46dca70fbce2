"""The HTTP routes that sign a browser in and out: the only code that writes the session cookie.

Forms on the sign-in, sign-up, first-run and account pages post here natively (no script
handles the password). A success sets :data:`chatsapp.auth.identity.SESSION_COOKIE` —
``HttpOnly`` (page scripts never see the token), ``SameSite=Strict``, ``Secure`` over HTTPS —
and answers ``303`` to the page to show next; a refusal answers ``303`` back to the form with
the sentence to show (``?error=``). The page then loads afresh, so its websocket handshake
carries the new cookie.

A form post from any other origin is refused (``403``): its ``Origin``, else ``Referer``,
must name one of the app's own origins, scheme, host and port compared whole
(:mod:`chatsapp.routes.origins`; another app on the same host at another port is the same *site*, so
its pages would carry the cookie), and the answer redirects to that origin only. That also
stops "login CSRF" (being signed in to an attacker's account by a page elsewhere).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from backend.accounts import SignedIn, client_address
from backend.config import web_origin
from backend.errors import ChatsError
from chatsapp.auth.identity import SESSION_COOKIE, session_token
from chatsapp.routes.origins import is_allowed
from chatsapp.services import offload, services

AUTH_PREFIX = "/auth"
MAX_FIELD_CHARS = 4096  # far above any real username, password or code
PAGES = ("/sign-in", "/sign-up", "/setup", "/account")


def safe_next(path: object) -> str:
    """Where to go after signing in: a path of this site only (never ``//host`` or a URL)."""
    if not isinstance(path, str) or not path.startswith("/") or path.startswith("//"):
        return "/"
    if "\\" in path or any(ord(ch) < 32 for ch in path) or path.startswith(PAGES):
        return "/"
    return path[:2000]


def _origin(request: Request) -> str | None:
    """The posting page's origin if it is one of the app's own, else None."""
    source = request.headers.get("origin") or request.headers.get("referer") or ""
    if not is_allowed(source, services().settings, request.headers.get("host", "")):
        return None
    return web_origin(source)


def _is_https(request: Request, origin: str) -> bool:
    """Behind a TLS-terminating proxy the app sees http; the page's own origin says https."""
    return request.url.scheme == "https" or origin.startswith("https:")


async def _fields(request: Request, *names: str) -> dict[str, str]:
    form = await request.form()
    values: dict[str, str] = {}
    for name in names:
        value = form.get(name, "")
        values[name] = value[:MAX_FIELD_CHARS] if isinstance(value, str) else ""
    return values


def _go(origin: str, path: str, **query: str) -> RedirectResponse:
    shown = {key: value for key, value in query.items() if value}
    suffix = ("?" + urlencode(shown)) if shown else ""
    return RedirectResponse(f"{origin}{path}{suffix}", status_code=303)


def _signed_in(request: Request, origin: str, signed: SignedIn, next_path: str) -> Response:
    response = _go(origin, safe_next(next_path))
    response.set_cookie(
        SESSION_COOKIE,
        signed.token,
        max_age=services().settings.sign_in_ttl_s,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_is_https(request, origin),
    )
    return response


def _address(request: Request) -> str:
    peer = request.client.host if request.client else ""
    return client_address(dict(request.headers), peer, services().settings)


Handler = Callable[[Request, str], Awaitable[Response]]


def _same_site(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    async def route(request: Request) -> Response:
        origin = _origin(request)
        if origin is None:
            return PlainTextResponse("Cross-site form posts are refused.", status_code=403)
        return await handler(request, origin)

    return route


async def _password_sign_in(
    request: Request,
    origin: str,
    step: Callable[..., SignedIn],
    *args: str | None,
    then: str,
    refused: Callable[[str], Response],
) -> Response:
    """Run a step that signs someone in (sign in, sign up, first admin) on the password
    workers, with the client's address last: on success set the cookie and go on to ``then``,
    on a refusal answer ``refused(sentence)`` (back to the form)."""
    try:
        signed = await services().accounts().password_work.run(step, *args, _address(request))
    except ChatsError as exc:
        return refused(str(exc))
    return _signed_in(request, origin, signed, then)


@_same_site
async def sign_in(request: Request, origin: str) -> Response:
    form = await _fields(request, "username", "password", "next")
    return await _password_sign_in(
        request,
        origin,
        services().accounts().sign_in,
        form["username"],
        form["password"],
        then=form["next"],
        refused=lambda error: _go(origin, "/sign-in", error=error, next=safe_next(form["next"])),
    )


@_same_site
async def sign_up(request: Request, origin: str) -> Response:
    form = await _fields(request, "username", "password", "invite")
    return await _password_sign_in(
        request,
        origin,
        services().accounts().sign_up,
        form["username"],
        form["password"],
        form["invite"] or None,
        then="/",
        refused=lambda error: _go(origin, "/sign-up", error=error, invite=form["invite"]),
    )


@_same_site
async def first_admin(request: Request, origin: str) -> Response:
    form = await _fields(request, "setup_code", "username", "password")
    return await _password_sign_in(
        request,
        origin,
        services().accounts().create_first_admin,
        form["setup_code"],
        form["username"],
        form["password"],
        then="/",
        refused=lambda error: _go(origin, "/setup", error=error),
    )


@_same_site
async def sign_out(request: Request, origin: str) -> Response:
    """End this browser's session: every tab holding the cookie is signed out."""
    token = session_token(request.headers.get("cookie", ""))
    if token:
        await offload(services().accounts().sign_out, token)
    response = _go(origin, "/sign-in", notice="You are signed out.")
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


@_same_site
async def sign_out_elsewhere(request: Request, origin: str) -> Response:
    """End every other session of this person (other browsers and devices)."""
    accounts = services().accounts()
    token = session_token(request.headers.get("cookie", ""))
    user = await offload(accounts.resolve, token)
    if user is None:
        return _go(origin, "/sign-in")
    ended = await offload(accounts.sign_out_everywhere, user.id, token)
    return _go(origin, "/account", notice=f"Signed out of {ended} other session(s).")


@_same_site
async def change_password(request: Request, origin: str) -> Response:
    """A new password; every other session ends (this one stays signed in)."""
    accounts = services().accounts()
    token = session_token(request.headers.get("cookie", ""))
    user = await offload(accounts.resolve, token)
    if user is None:
        return _go(origin, "/sign-in")
    form = await _fields(request, "current", "new")
    try:
        await accounts.password_work.run(
            accounts.change_password,
            user.id,
            form["current"],
            form["new"],
            token,
            _address(request),
        )
    except ChatsError as exc:
        return _go(origin, "/account", error=str(exc))
    return _go(origin, "/account", notice="Password changed. Other sessions were signed out.")


def auth_routes() -> Starlette:
    """Mounted in front of Reflex's app (``rx.App(api_transformer=...)``)."""
    return Starlette(
        routes=[
            Route(f"{AUTH_PREFIX}/sign-in", sign_in, methods=["POST"]),
            Route(f"{AUTH_PREFIX}/sign-up", sign_up, methods=["POST"]),
            Route(f"{AUTH_PREFIX}/setup", first_admin, methods=["POST"]),
            Route(f"{AUTH_PREFIX}/sign-out", sign_out, methods=["POST"]),
            Route(f"{AUTH_PREFIX}/sign-out-elsewhere", sign_out_elsewhere, methods=["POST"]),
            Route(f"{AUTH_PREFIX}/password", change_password, methods=["POST"]),
        ]
    )
