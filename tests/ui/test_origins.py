"""Which page origins may use the app: scheme, host and port compared whole.

The browser stories (tests/e2e/test_same_site_origin.py) show a page of another port on the
same host refused at each door; these pin the rule itself, and the gate that applies it
before any route, CORS answer or socket handler.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backend.config import Settings, web_origin
from chatsapp.routes import origins
from chatsapp.routes.origins import OriginGate, allowed_origins, is_allowed

PROD = Settings.from_env({"CHATS_FRONTEND_PORT": "3000", "CHATS_BACKEND_PORT": "3000"})
DEV = Settings.from_env({"CHATS_FRONTEND_PORT": "3000", "CHATS_BACKEND_PORT": "8000"})
CONFIGURED = Settings.from_env({"CHATS_ALLOWED_ORIGINS": "https://Chats.Example.com:443/"})


class TestWebOrigin:
    def test_two_spellings_of_one_origin_are_equal(self):
        assert web_origin("https://Chats.Example.com:443/x?y") == "https://chats.example.com"
        assert web_origin("http://chats.example.com:80") == "http://chats.example.com"
        assert web_origin("http://[::1]:8000/") == "http://[::1]:8000"

    @pytest.mark.parametrize(
        "value", ["null", "", "file:///etc/passwd", "javascript:alert(1)", "http://u:p@host/"]
    )
    def test_what_is_no_web_origin(self, value: str):
        assert web_origin(value) is None


class TestTheServedOriginByDefault:
    def test_is_the_requests_own_host_and_port_over_http_or_https(self):
        assert allowed_origins(PROD, "chats.lan:3000") == {
            "http://chats.lan:3000",
            "https://chats.lan:3000",
        }
        assert is_allowed("https://chats.lan", PROD, "chats.lan")  # behind a TLS proxy

    @pytest.mark.parametrize(
        "origin",
        [
            "http://chats.lan:3001",  # another app on the same host: same site, other origin
            "http://chats.lan",  # the same host name, port 80
            "http://wiki.chats.lan:3000",  # a sibling subdomain
            "http://chats.lan.evil.example:3000",  # a look-alike
            "null",  # a sandboxed frame or a file
            "",  # no origin at all: a form post must name one
        ],
    )
    def test_refuses_every_other_origin(self, origin: str):
        assert not is_allowed(origin, PROD, "chats.lan:3000")

    def test_a_referer_counts_by_its_origin(self):
        assert is_allowed("http://chats.lan:3000/sign-in?next=/", PROD, "chats.lan:3000")

    def test_the_development_servers_pages_on_their_own_port_are_allowed(self):
        assert is_allowed("http://localhost:3000", DEV, "localhost:8000")
        assert not is_allowed("http://localhost:3001", DEV, "localhost:8000")
        assert is_allowed("http://[::1]:3000", DEV, "[::1]:8000")

    @pytest.mark.parametrize("host", ["", "evil.example/x", "a b", "u@chats.lan"])
    def test_a_host_header_that_is_no_plain_host_allows_nothing(self, host: str):
        assert allowed_origins(PROD, host) == frozenset()


class TestConfiguredOrigins:
    def test_are_the_only_ones_allowed_whatever_the_host_header_says(self):
        assert is_allowed("https://chats.example.com", CONFIGURED, "127.0.0.1:3000")
        assert not is_allowed("http://127.0.0.1:3000", CONFIGURED, "127.0.0.1:3000")

    @pytest.mark.parametrize(
        "value", ["chats.example.com", "https://chats.example.com/app", "ftp://x", "https://"]
    )
    def test_an_entry_that_is_no_origin_is_a_clear_error(self, value: str):
        with pytest.raises(ValueError, match="CHATS_ALLOWED_ORIGINS"):
            Settings.from_env({"CHATS_ALLOWED_ORIGINS": value})

    def test_several_are_read_comma_separated(self):
        settings = Settings.from_env(
            {"CHATS_ALLOWED_ORIGINS": "https://a.example, http://10.0.0.5:3000"}
        )
        assert settings.allowed_origins == ("https://a.example", "http://10.0.0.5:3000")


@dataclasses.dataclass
class _FakeServices:
    settings: Settings


@pytest.fixture
def prod_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    settings = dataclasses.replace(PROD, data_dir=Path("unused"))
    monkeypatch.setattr(origins, "services", lambda: _FakeServices(settings))
    yield


def _through_gate(kind: str, headers: dict[str, str]) -> tuple[bool, list[dict[str, Any]]]:
    """(whether the wrapped app ran, what was sent) for one request through the gate."""
    reached: list[bool] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(True)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": kind,
        "path": "/_event/",
        "method": "GET",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(OriginGate(app)(scope, receive, send))
    return bool(reached), sent


@pytest.mark.usefixtures("prod_settings")
class TestTheGate:
    def test_a_socket_handshake_from_another_origin_is_closed_before_it_is_accepted(self):
        reached, sent = _through_gate(
            "websocket", {"Host": "chats.lan:3000", "Origin": "http://chats.lan:3001"}
        )
        assert not reached and sent == [{"type": "websocket.close", "code": 1008}]

    def test_a_request_from_another_origin_is_refused(self):
        reached, sent = _through_gate(
            "http", {"Host": "chats.lan:3000", "Origin": "http://chats.lan:3001"}
        )
        assert not reached and sent[0]["status"] == 403

    @pytest.mark.parametrize("headers", [{"Origin": "http://chats.lan:3000"}, {}])
    def test_the_apps_own_origin_or_none_goes_on(self, headers: dict[str, str]):
        for kind in ("http", "websocket"):
            reached, sent = _through_gate(kind, {"Host": "chats.lan:3000", **headers})
            assert reached and sent == []
