"""The Content-Security-Policy: what it allows, and the middleware that sends it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from chatsapp.routes.csp import META_POLICY, ContentSecurityPolicy, served_policy


def _directives(policy: str) -> dict[str, str]:
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] for d in policy.split("; ")}


class TestThePolicy:
    def test_images_come_only_from_this_origin_data_and_blob(self):
        assert _directives(served_policy("chats.local:3000"))["img-src"] == "'self' data: blob:"
        assert _directives(META_POLICY)["img-src"] == "'self' data: blob:"

    def test_the_event_websocket_of_the_serving_host_is_allowed(self):
        connect = _directives(served_policy("127.0.0.1:3000"))["connect-src"]
        assert connect == "'self' ws://127.0.0.1:3000 wss://127.0.0.1:3000"

    def test_a_host_header_that_is_not_a_plain_host_is_not_echoed(self):
        policy = served_policy("evil.example; script-src *")
        assert "evil" not in policy
        assert _directives(policy)["connect-src"] == "'self'"

    def test_the_meta_policy_holds_no_directive_that_depends_on_where_the_page_is_served(self):
        assert not {"connect-src", "frame-ancestors", "script-src"} & set(_directives(META_POLICY))


async def _call(scope: dict) -> list[dict]:
    sent: list[dict] = []

    async def inner(scope: dict, receive: object, send: Callable[[dict], Awaitable[None]]) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def send(message: dict) -> None:
        sent.append(message)

    await ContentSecurityPolicy(inner)(scope, None, send)
    return sent


class TestTheMiddleware:
    def test_every_http_response_carries_the_header(self):
        scope = {"type": "http", "headers": [(b"host", b"127.0.0.1:3000")]}
        start = asyncio.run(_call(scope))[0]
        headers = dict(start["headers"])
        assert headers[b"content-security-policy"] == served_policy("127.0.0.1:3000").encode()

    def test_a_websocket_passes_through_untouched(self):
        start = asyncio.run(_call({"type": "websocket", "headers": []}))[0]
        assert start["headers"] == []
