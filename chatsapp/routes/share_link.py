"""``GET /share/<token>``: a read-only share link's page, built on the server from its snapshot.

What the page holds is the snapshot (``Sharing.open_link``: the title, and each message's
author name, role, time, text and, only when the owner included them, its files) and nothing
else: no id of any chat or person, no memory, no script, no live updates. Every piece of text
is HTML-escaped and shown as written (``white-space: pre-wrap``): markdown, math and code read
as their source, so nothing a message holds can become markup, a link the browser follows,
or a request. Images are inline ``data:`` URLs of the stored bytes (the upload rules allow only
PNG, JPEG, GIF and WebP images); other files are ``data:`` downloads.

Every response says ``noindex`` (``X-Robots-Tag`` and the page's ``<meta name="robots">``),
``no-store`` (a revoked link's page must not live on in a cache), ``no-referrer`` (the token
is in the address) and carries its own Content-Security-Policy: nothing may load but the
inline style and ``data:`` images (:mod:`chatsapp.routes.csp` keeps a route's own policy).

The store is read on every request: a revoke made by any process answers ``404`` at the next
request everywhere. An unknown, malformed, over-long, revoked or deleted chat's token all get
the same ``404`` page, byte for byte.
"""

from __future__ import annotations

import base64
import html
import threading
from collections.abc import Callable
from datetime import UTC, datetime

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from backend.errors import ShareLinkNotFoundError
from backend.sharing import SharedSnapshot, Sharing, SnapshotAttachment, SnapshotMessage
from chatsapp.services import offload, services

SHARE_PATH = "/share/{token}"
PAGE_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; " + (
    "form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "X-Robots-Tag": "noindex, nofollow",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": PAGE_POLICY,
}
INLINE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;"
    "color:#1f2328;background:#fff}article{border-top:1px solid #d0d7de;padding:.75rem 0}"
    ".who{font-weight:600}.when{color:#59636e;font-size:.85em;margin-left:.5em}"
    ".text{white-space:pre-wrap;overflow-wrap:anywhere}img{max-width:100%}"
)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="robots" content="noindex, nofollow">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    )


NOT_FOUND_PAGE = _page(
    "Not found", f"<h1>Not found</h1><p>{html.escape(ShareLinkNotFoundError.MESSAGE)}</p>"
)


def render_snapshot(snapshot: SharedSnapshot) -> str:
    """The link's whole page: every value escaped, nothing but the snapshot."""
    title = snapshot.title or "Shared chat"
    messages = "".join(_message(message) for message in snapshot.messages)
    shared = html.escape(_time(snapshot.created_at))
    return _page(
        title,
        f"<h1>{html.escape(title)}</h1><p>A read-only copy, shared {shared}.</p>{messages}",
    )


def _message(message: SnapshotMessage) -> str:
    who = html.escape(message.author or message.role)
    files = "".join(_attachment(file) for file in message.attachments)
    return (
        f'<article><div><span class="who">{who}</span>'
        f'<span class="when">{html.escape(_time(message.created_at))}</span></div>'
        f'<div class="text">{html.escape(message.text)}</div>{files}</article>'
    )


def _attachment(file: SnapshotAttachment) -> str:
    media_type = file.media_type if "/" in file.media_type else "application/octet-stream"
    url = f"data:{media_type};base64,{base64.b64encode(file.data).decode('ascii')}"
    name = html.escape(file.name)
    if media_type in INLINE_IMAGE_TYPES:
        return f'<div><img src="{html.escape(url)}" alt="{name}"></div>'
    return f'<div><a download="{name}" href="{html.escape(url)}">{name}</a></div>'


def _time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def not_found() -> HTMLResponse:
    return HTMLResponse(NOT_FOUND_PAGE, status_code=404, headers=HEADERS)


def share_link_routes(sharing: Callable[[], Sharing] | None = None) -> Starlette:
    """Mounted in front of Reflex's app (``rx.App(api_transformer=...)``). ``sharing`` gives
    the process's sharing service (default: one opened on the services' data folder)."""
    opener = sharing or process_sharing

    async def share_page(request: Request) -> HTMLResponse:
        token = request.path_params.get("token", "")
        try:
            snapshot = await offload(opener().open_link, token)
        except ShareLinkNotFoundError:
            return not_found()
        return HTMLResponse(render_snapshot(snapshot), headers=HEADERS)

    return Starlette(routes=[Route(SHARE_PATH, share_page, methods=["GET"])])


_opened: list[Sharing] = []
_opening = threading.Lock()


def process_sharing() -> Sharing:
    """This process's sharing service, opened on first use (it reads the store per call)."""
    with _opening:
        if not _opened:
            shared = services()
            _opened.append(Sharing(shared.settings, shared.accounts()))
        return _opened[0]
