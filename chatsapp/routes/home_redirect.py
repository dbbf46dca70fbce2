"""``/`` opens the person's latest chat before the page loads, not after.

The ``/`` page exists only to send someone to their latest chat. Done by the page (an event
after it loads), the redirect lands while the page is already usable: it replaces the whole
page, closing a menu someone opened and dropping what they had begun to type in a search box.
Where the backend serves the pages (production: one port), this middleware answers ``GET /``
of a signed-in person who has chats with a redirect instead, so the chat page is the first
page they get. Everyone else, and the development server (whose pages the backend does not
serve), falls back to the page's own redirect (:class:`chatsapp.states.home.HomeTabState`).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.responses import RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from chatsapp.auth.identity import identify
from chatsapp.chat_route import chat_path
from chatsapp.services import offload, services

HOME_PATH = "/"


def latest_chat_path(user_id: str) -> str | None:
    """The address of the person's most recent chat (archived ones aside), if they have one."""
    latest = services().directory(user_id).list_chats(limit=1)
    return chat_path(latest[0].id) if latest else None


class LatestChatRedirect:
    """ASGI middleware: ``GET /`` of a signed-in person with chats → their latest chat."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target = await self._target(scope) if _is_home_page_request(scope) else None
        if target is None:
            await self.app(scope, receive, send)
            return
        # Never cached: the latest chat changes, and the next person on this browser differs.
        response = RedirectResponse(target, status_code=307, headers={"Cache-Control": "no-store"})
        await response(scope, receive, send)

    @staticmethod
    async def _target(scope: Scope) -> str | None:
        client = scope.get("client")
        peer = client[0] if client else ""
        viewer = await offload(identify, dict(Headers(scope=scope)), peer)
        if viewer is None:
            return None
        return await offload(latest_chat_path, viewer.user_id)


def _is_home_page_request(scope: Scope) -> bool:
    return (
        scope["type"] == "http"
        and scope.get("method") in ("GET", "HEAD")
        and scope.get("path") == HOME_PATH
    )
