"""``GET /share/<token>``: a read-only share link's page, built on the server from its snapshot.

The page itself is :mod:`backend.sharing.link_page` (the snapshot and nothing else, markdown,
math and code rendered by the app's rules, no script). This module adds what HTTP says:
``noindex`` (``X-Robots-Tag``; the page has the robots meta tag too), ``no-store`` (a revoked
link's page must not live on in a cache), ``no-referrer`` (the token is in the address) and
the page's own Content-Security-Policy: nothing may load but the inline style and ``data:``
images, and no script may run (:mod:`chatsapp.routes.csp` keeps a route's own policy).

The store is read on every request: a revoke made by any process answers ``404`` at the next
request everywhere. An unknown, malformed, over-long, revoked or deleted chat's token all get
the same ``404`` page, byte for byte. Rendering is memoised by the snapshot's content
(:class:`RenderedPages`): the read still decides whether there is a page, the memo only spares
re-rendering the same snapshot for every visitor.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from backend.errors import ShareLinkNotFoundError
from backend.sharing import SharedSnapshot, Sharing
from backend.sharing.link_page import NOT_FOUND_PAGE, render_snapshot
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
MEMO_BYTES = 32 * 1024 * 1024


class RenderedPages:
    """Rendered pages by the digest of what they were rendered from, least recently used
    dropped past ``max_bytes``. Holds only pages a link opened moments ago; a revoked link's
    page is never served from here (the store said 404 first) and ages out."""

    def __init__(self, max_bytes: int = MEMO_BYTES) -> None:
        self._max_bytes = max_bytes
        self._pages: OrderedDict[bytes, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def held_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def page(self, snapshot: SharedSnapshot, own_host: str) -> str:
        key = _digest(snapshot, own_host)
        with self._lock:
            found = self._pages.get(key)
            if found is not None:
                self._pages.move_to_end(key)
                return found
        rendered = render_snapshot(snapshot, own_host=own_host)
        with self._lock:
            if key not in self._pages and len(rendered) <= self._max_bytes:
                self._pages[key] = rendered
                self._bytes += len(rendered)
            while self._bytes > self._max_bytes:
                _, dropped = self._pages.popitem(last=False)
                self._bytes -= len(dropped)
        return rendered


def _digest(snapshot: SharedSnapshot, own_host: str) -> bytes:
    digest = hashlib.sha256()
    for value in _fields(snapshot, own_host):
        digest.update(len(value).to_bytes(8, "big"))  # lengths first: no two snapshots collide
        digest.update(value)
    return digest.digest()


def _fields(snapshot: SharedSnapshot, own_host: str) -> Iterator[bytes]:
    """Everything the page is rendered from, field by field, counts before lists."""

    def text(*values: str | int) -> Iterator[bytes]:
        for value in values:
            yield str(value).encode("utf-8", "surrogatepass")

    yield from text(own_host, snapshot.title, snapshot.created_at, len(snapshot.messages))
    for message in snapshot.messages:
        yield from text(message.author, message.role, message.text, message.created_at)
        yield from text(len(message.attachments))
        for file in message.attachments:
            yield from text(file.name, file.media_type)
            yield file.data


def not_found() -> HTMLResponse:
    return HTMLResponse(NOT_FOUND_PAGE, status_code=404, headers=HEADERS)


def share_link_routes(sharing: Callable[[], Sharing] | None = None) -> Starlette:
    """Mounted in front of Reflex's app (``rx.App(api_transformer=...)``). ``sharing`` gives
    the sharing service (default: the process's one, :meth:`Services.sharing`)."""
    opener = sharing or process_sharing
    pages = RenderedPages()

    async def share_page(request: Request) -> HTMLResponse:
        token = request.path_params.get("token", "")
        try:
            snapshot = await offload(opener().open_link, token)
        except ShareLinkNotFoundError:
            return not_found()
        body = await offload(pages.page, snapshot, request.url.hostname or "")
        return HTMLResponse(body, headers=HEADERS)

    return Starlette(routes=[Route(SHARE_PATH, share_page, methods=["GET"])])


def process_sharing() -> Sharing:
    """This process's one sharing service (:meth:`Services.sharing`), which the states,
    the live poller, the export route and this page all use."""
    return services().sharing()
