"""The upload guard's rules, below the browser: what a body may hold, and how it is cut off.

The stories against a running app (tests/e2e/test_upload_auth.py, test_upload_limits.py) show
a learned token refused and the temporary disk left empty; these pin the caps and the ASGI
behaviour that gets there: the route sees the client leave past the cap, the client gets 413.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from backend.config import Settings
from chatsapp import reflex_seam as seam
from chatsapp.routes import upload_guard
from chatsapp.routes.upload_guard import (
    BODY_OVERHEAD_BYTES,
    PART_OVERHEAD_BYTES,
    UploadGuard,
    attachments_cap,
    import_cap,
)

SETTINGS = Settings.from_env(
    {
        "CHATS_MAX_ATTACHMENT_BYTES": "1000",
        "CHATS_MAX_ATTACHMENTS_PER_MESSAGE": "3",
        "CHATS_MAX_MESSAGE_ATTACHMENT_BYTES": "2000",
        "CHATS_MAX_IMPORT_BYTES": "5000",
    }
)


class Route:
    """A stand-in for Reflex's upload route: reads the body to its end, then answers 200."""

    def __init__(self) -> None:
        self.body = 0
        self.saw_disconnect = False
        self.reached = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.reached = True
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.saw_disconnect = True
                break
            self.body += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def run(app: Any, chunks: list[bytes], headers: dict[str, str] | None = None) -> list[int]:
    """The statuses the client received for a request whose body arrives in ``chunks``."""
    pending = list(chunks)
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        body = pending.pop(0) if pending else b""
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {
        "type": "http",
        "method": "POST",
        "path": seam.upload_path(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    asyncio.run(app(scope, receive, send))
    return statuses


class TestTheCaps:
    def test_a_composer_upload_may_hold_a_messages_files_and_framing_no_more(self):
        # 3 files x 1,000 bytes is over the message's 2,000: the smaller bound holds.
        expected = 2000 + 3 * PART_OVERHEAD_BYTES + BODY_OVERHEAD_BYTES
        assert attachments_cap(SETTINGS) == expected
        roomy = dataclasses.replace(SETTINGS, max_message_attachment_bytes=10**9)
        assert attachments_cap(roomy) == 3 * (1000 + PART_OVERHEAD_BYTES) + BODY_OVERHEAD_BYTES

    def test_an_import_may_hold_one_file_of_the_import_limit(self):
        assert import_cap(SETTINGS) == 5000 + PART_OVERHEAD_BYTES + BODY_OVERHEAD_BYTES


class TestABodyWhileItStreams:
    def test_past_the_cap_the_route_sees_the_client_leave_and_the_client_gets_413(self):
        route = Route()
        statuses = run(
            lambda s, r, w: upload_guard._capped(route, 2500, s, r, w), [b"x" * 1000] * 10
        )
        assert route.saw_disconnect and route.body == 2000  # never a byte past the cap
        assert statuses == [413]

    def test_within_the_cap_it_reaches_the_route_whole(self):
        route = Route()
        statuses = run(
            lambda s, r, w: upload_guard._capped(route, 2500, s, r, w), [b"x" * 1000] * 2
        )
        assert not route.saw_disconnect and route.body == 2000
        assert statuses == [200]


@pytest.fixture
def guard_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclasses.dataclass
    class FakeServices:
        settings: Settings

    monkeypatch.setattr(upload_guard, "services", lambda: FakeServices(SETTINGS))


@pytest.mark.usefixtures("guard_settings")
class TestTheGuard:
    def test_an_upload_to_a_handler_it_does_not_know_is_refused_unread(self):
        route = Route()
        guard = UploadGuard(route, lambda: None, {"known.handle_upload": attachments_cap})
        headers = {seam.UPLOAD_HANDLER_HEADER: "other.handler", "Content-Length": "10"}
        assert run(guard, [b"x" * 10], headers) == [400]
        assert not route.reached

    def test_a_token_no_browser_makes_is_refused_unread(self):
        route = Route()
        guard = UploadGuard(route, lambda: None, {"known.handle_upload": attachments_cap})
        headers = {
            seam.UPLOAD_HANDLER_HEADER: "known.handle_upload",
            seam.UPLOAD_TOKEN_HEADER: "user-alice",
        }
        assert run(guard, [b"x" * 10], headers) == [403]
        assert not route.reached
