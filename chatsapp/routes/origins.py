"""Which page origins may talk to the app with the person's cookie: the app's own, only.

``SameSite=Strict`` keeps the session cookie off requests from other *sites*; a page on the
same host at another port (another web app on the machine) or on a sibling subdomain is the
same site, and its requests carry the cookie. So every door a page can open is checked by
*origin* — scheme, host and port, compared whole:

* :class:`OriginGate`, outermost on the backend: an HTTP request or websocket handshake whose
  ``Origin`` header names another origin is refused (``403``) before any route, CORS answer
  or socket.io handler runs. A request without ``Origin`` (a navigation, a non-browser
  client) goes on: a browser names the origin on every request a page's script or form can
  make across origins, and a non-browser client carries no one's cookie by accident;
* the sign-in routes (:mod:`chatsapp.routes.account_forms`) require an allowed ``Origin`` (else
  ``Referer``) and redirect to that origin only.

The allowed origins are ``CHATS_ALLOWED_ORIGINS`` when set. Unset, they are the origin the
request itself is addressed to (its ``Host`` header, over http or https: behind a TLS proxy
the app sees http while the page says https), plus the same host at the frontend port when
the development server serves pages apart from the backend.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from backend.config import Settings, web_origin
from chatsapp.routes.csp import is_plain_host
from chatsapp.services import services

REFUSAL = "Requests from another origin are refused."


def allowed_origins(settings: Settings, host_header: str) -> frozenset[str]:
    """The origins whose pages may use the app, for a request addressed to ``host_header``."""
    if settings.allowed_origins:
        return frozenset(settings.allowed_origins)
    host = host_header.strip()
    if not is_plain_host(host):
        return frozenset()
    try:
        name = urlsplit(f"http://{host}").hostname
    except ValueError:
        return frozenset()
    if not name:
        return frozenset()
    hosts = [host]
    if settings.frontend_port != settings.backend_port:  # the development server's pages
        bracketed = f"[{name}]" if ":" in name else name
        hosts.append(f"{bracketed}:{settings.frontend_port}")
    found = {web_origin(f"{scheme}://{each}") for each in hosts for scheme in ("http", "https")}
    return frozenset(origin for origin in found if origin)


def is_allowed(origin_header: str, settings: Settings, host_header: str) -> bool:
    """Whether a page of ``origin_header`` (an ``Origin`` value, or a ``Referer`` URL) is ours."""
    origin = web_origin(origin_header) if origin_header else None
    return origin is not None and origin in allowed_origins(settings, host_header)


class OriginGate:
    """ASGI middleware: refuses a request or socket handshake from another origin (``403``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = Headers(scope=scope)
            origin = headers.get("origin")
            host = headers.get("host", "")
            if origin is not None and not is_allowed(origin, services().settings, host):
                await _refuse(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "websocket":
        # Closing before accepting: the server answers the handshake with 403.
        await send({"type": "websocket.close", "code": 1008})
        return
    await PlainTextResponse(REFUSAL, status_code=403)(scope, receive, send)
