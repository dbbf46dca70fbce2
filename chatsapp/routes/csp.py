"""The page's Content-Security-Policy: what the browser may load, whatever a message contains.

Sent two ways:

* as an HTTP header on every response of the backend's ASGI app (``app.api_transformer``). In
  production (``scripts/run``: one port) that app also serves the built frontend, so the page
  itself carries the full policy.
* as a ``<meta http-equiv>`` in every page's head, so the dev server and a static export also
  forbid remote images. It holds only the directives that cannot break the app wherever it is
  served: ``connect-src`` depends on where the backend is (another port in dev), and
  ``frame-ancestors`` is ignored in a meta tag.

Why each allowance: Reflex's prerendered pages hydrate through inline scripts and
``rx.call_script`` evaluates strings (``'unsafe-inline' 'unsafe-eval'``); Emotion and Radix
inject style tags (``style-src 'unsafe-inline'``); the event websocket is same-origin in
production (named explicitly, since older browsers do not match ``ws:`` with ``'self'``).
Images: this origin, ``data:`` (attachments) and ``blob:`` only, never a remote host.
"""

from __future__ import annotations

import re

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "Content-Security-Policy"

# Directives that hold wherever the page is served (also sent as the meta tag).
PORTABLE_DIRECTIVES = (
    "img-src 'self' data: blob:",
    "object-src 'none'",
    "base-uri 'self'",
)
_SERVED_DIRECTIVES = (
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "font-src 'self' data:",
    "form-action 'self'",
    "frame-ancestors 'none'",
)
_HOST = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")

META_POLICY = "; ".join(PORTABLE_DIRECTIVES)


def is_plain_host(host: str) -> bool:
    """Whether a Host header is a plain ``host[:port]`` (it is client input)."""
    return _HOST.match(host) is not None


def served_policy(host: str = "") -> str:
    """The full policy for a page served at ``host`` (the request's Host header)."""
    connect = ["'self'"]
    if is_plain_host(host):  # only a plain host[:port] is echoed
        connect += [f"ws://{host}", f"wss://{host}"]
    directives = [*_SERVED_DIRECTIVES, *PORTABLE_DIRECTIVES, "connect-src " + " ".join(connect)]
    return "; ".join(directives)


class ContentSecurityPolicy:
    """ASGI middleware adding the policy header to every HTTP response (websockets untouched)
    that has none of its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = served_policy(Headers(scope=scope).get("host", ""))

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                # A route that set a stricter policy of its own keeps it (a share link's page).
                MutableHeaders(scope=message).setdefault(HEADER, policy)
            await send(message)

        await self.app(scope, receive, send_with_policy)
