"""``POST /_upload`` is checked from its own request, before its body is read, and capped.

Reflex's upload route names the tab by its client-token header and queues the upload as an
event of that tab, which the guard (:mod:`chatsapp.auth.guard`) checks against the headers
the tab's *socket* connected with, not the upload's. A learned client token (a closed tab's:
the socket URL carries it, so proxy logs hold it) was therefore a bearer credential: with no
cookie, a client attached files to the owner's composer, imported chats into their account,
read the answer's copy of the owner's tab and renewed their session. And Reflex parses a
buffered upload's whole multipart body, spooling files to the temporary disk, before any of
that: a made-up token filled the disk.

So this middleware, in front of the route:

1. knows each upload handler of the app and the most its body may hold (``caps``: files x
   the attachment limit, the import limit, plus multipart overhead); any other handler: 400;
2. identifies the person from the request itself (:func:`chatsapp.auth.identity.identify`: the
   cookie, the trusted proxy's header in ``header`` mode, the local user in ``none`` mode)
   and refuses (``403``) unless the client token is a browser's and is bound to that person
   (:func:`chatsapp.auth.token_binding.bound_owner`) — nothing of the body read yet, no session
   renewed but the requester's own;
3. refuses a declared ``Content-Length`` over the cap at once (``413``), and counts the body
   while it streams: past the cap, the route sees the client leave (it stops parsing and
   drops what it spooled) and the client gets ``413``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backend.config import Settings
from chatsapp import reflex_seam as seam
from chatsapp.auth.identity import identify, is_browser_token
from chatsapp.auth.token_binding import bound_owner
from chatsapp.services import offload, services

# Multipart framing besides the files' bytes: boundaries, each part's headers and name.
PART_OVERHEAD_BYTES = 4 * 1024
BODY_OVERHEAD_BYTES = 64 * 1024

# Reflex's upload route and the headers its page sends (chatsapp/reflex_seam.py).
CLIENT_TOKEN_HEADER = seam.UPLOAD_TOKEN_HEADER
HANDLER_HEADER = seam.UPLOAD_HANDLER_HEADER


def attachments_cap(settings: Settings) -> int:
    """The largest body of one composer upload: a message's files, at most."""
    files = settings.max_attachments_per_message
    per_file = files * (settings.max_attachment_bytes + PART_OVERHEAD_BYTES)
    whole = settings.max_message_attachment_bytes + files * PART_OVERHEAD_BYTES
    return min(per_file, whole) + BODY_OVERHEAD_BYTES


def import_cap(settings: Settings) -> int:
    """The largest body of an import: one file of the import limit."""
    return settings.max_import_bytes + PART_OVERHEAD_BYTES + BODY_OVERHEAD_BYTES


def one_attachment_cap(settings: Settings) -> int:
    """The largest body of one file of the attachment limit (a project's file)."""
    return settings.max_attachment_bytes + PART_OVERHEAD_BYTES + BODY_OVERHEAD_BYTES


Cap = Callable[[Settings], int]


class UploadGuard:
    """ASGI middleware in front of Reflex's upload route (see the module docstring).

    ``reflex_app`` gives the Reflex app (whose state manager holds each tab's bound owner);
    ``caps`` maps each upload handler's full name to the most its body may hold.
    """

    def __init__(
        self, app: ASGIApp, reflex_app: Callable[[], Any], caps: Mapping[str, Cap]
    ) -> None:
        self.app = app
        self._reflex_app = reflex_app
        self._caps = dict(caps)
        self._path = seam.upload_path()

    @classmethod
    def install(cls, reflex_app: Callable[[], Any], caps: Mapping[str, Cap]) -> Callable[..., Any]:
        """An ``api_transformer`` entry: wraps the app's ASGI app in this guard."""
        return lambda app: cls(app, reflex_app, caps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self._path:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        settings = services().settings
        cap = self._caps.get(headers.get(HANDLER_HEADER, ""))
        if cap is None:
            await _answer(scope, receive, send, 400, "No such upload.")
            return
        if not await self._is_owners(headers, scope):
            await _answer(scope, receive, send, 403, "This upload is not yours to make.")
            return
        limit = cap(settings)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _answer(scope, receive, send, 413, _too_large(limit))
            return
        await _capped(self.app, limit, scope, receive, send)

    async def _is_owners(self, headers: Headers, scope: Scope) -> bool:
        token = headers.get(CLIENT_TOKEN_HEADER, "")
        if not is_browser_token(token):
            return False
        peer = scope["client"][0] if scope.get("client") else ""
        viewer = await offload(identify, dict(headers), peer)
        if viewer is None:
            return False
        return await bound_owner(self._reflex_app(), token) == viewer.user_id


async def _capped(app: ASGIApp, limit: int, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app`` on a body cut off past ``limit`` bytes; then the client gets ``413``."""
    received = 0
    over = started = False

    async def capped_receive() -> Message:
        nonlocal received, over
        if over:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                over = True  # the route stops parsing as if the client left
                return {"type": "http.disconnect"}
        return message

    async def guarded_send(message: Message) -> None:
        nonlocal started
        if over and not started:
            return  # the route's answer to a "disconnect": the 413 below replaces it
        started = started or message["type"] == "http.response.start"
        await send(message)

    await app(scope, capped_receive, guarded_send)
    if over and not started:
        await _answer(scope, receive, send, 413, _too_large(limit))


def _too_large(limit: int) -> str:
    return f"This upload is over {limit:,} bytes: nothing of it was kept."


async def _answer(scope: Scope, receive: Receive, send: Send, status: int, text: str) -> None:
    await PlainTextResponse(text, status_code=status)(scope, receive, send)
