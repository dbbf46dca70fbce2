"""A Reflex client below the browser: a socket.io connection that sends whatever a test crafts.

It speaks what the page's ``state.js`` speaks (connect to ``/_event`` with ``?token=<client
token>``; emit ``event`` with ``name``, ``payload`` and ``router_data``; receive ``event``
updates) but sends any cookie, client token, event name and payload, as a hostile client
would. Runs its own event loop on a thread, so it works beside Playwright's sync API.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable
from typing import Any

import socketio

from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.auth.token_binding import NEW_TOKEN, TOKEN_REFUSED
from tests.support.deadlines import WAIT_S

HYDRATE = "reflex___state____state.hydrate"
NAMESPACE = (
    "/_event"  # socket.io-client takes the URL's path as the namespace, and Reflex serves it
)


def _is_full_state(update: dict[str, Any]) -> bool:
    return any(key.endswith("on_load_internal_state") for key in update.get("delta") or {})


class RawTab:
    """One connection. Every update the server sends is kept in :attr:`received`."""

    def __init__(
        self,
        backend_url: str,
        *,
        session_token: str = "",
        client_token: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.backend_url = backend_url
        self.session_token = session_token
        self.headers = dict(headers or {})  # more handshake headers (User-Agent, Origin)
        self.client_token = client_token or str(uuid.uuid4())
        self.received: list[dict[str, Any]] = []
        self._settled = 0  # how much of ``received`` earlier settle() calls returned
        self._hydrates_sent = 0
        self._full_states = 0
        self._caught_up = asyncio.Event()
        self.disconnected = threading.Event()
        # What the server said besides updates: its refusal of the token and the one it gave.
        self.refusals: list[str] = []
        self.new_tokens: list[str] = []
        self.refused = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        # The standard json module, set on every client: python-socketio keeps one encoder per
        # process, and importing the app (Reflex's socket server) swaps in one that writes
        # non-ASCII raw, so a lone surrogate in a hostile payload could not even be sent. On
        # the wire a client can only send it escaped ("\\ud800"), which is what this sends.
        self._sio = socketio.AsyncClient(reconnection=False, json=json)
        self._sio.on("event", self._on_update, namespace=NAMESPACE)
        self._sio.on("disconnect", self._on_disconnect, namespace=NAMESPACE)
        self._sio.on(TOKEN_REFUSED, self._on_refused, namespace=NAMESPACE)
        self._sio.on(NEW_TOKEN, self._on_new_token, namespace=NAMESPACE)
        self._updates = asyncio.Queue()  # type: asyncio.Queue[dict[str, Any]]
        self._pongs = asyncio.Queue()  # type: asyncio.Queue[Any]
        self._sio.on("ping", self._pongs.put, namespace=NAMESPACE)  # Reflex answers "ping"

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(WAIT_S + 5)

    async def _on_disconnect(self, *_reason: Any) -> None:
        self.disconnected.set()

    async def _on_new_token(self, token: str) -> None:
        """Kept as the page keeps it (session storage): a reconnect names this token."""
        self.new_tokens.append(token)
        self.client_token = token

    async def _on_refused(self, reason: str) -> None:
        self.refusals.append(reason)
        self.refused.set()

    async def _on_update(self, update: Any) -> None:
        parsed = json.loads(update) if isinstance(update, str) else update
        self.received.append(parsed)
        if _is_full_state(parsed):
            self._full_states += 1
            if self._full_states >= self._hydrates_sent:
                self._caught_up.set()
        await self._updates.put(parsed)

    def connect(self) -> RawTab:
        headers = dict(self.headers)
        if self.session_token:
            headers["Cookie"] = f"{SESSION_COOKIE}={self.session_token}"
        self._run(
            self._sio.connect(
                f"{self.backend_url}?token={self.client_token}",
                socketio_path=NAMESPACE,
                namespaces=[NAMESPACE],
                transports=["websocket"],
                headers=headers,
                wait_timeout=WAIT_S,
            )
        )
        return self

    def send(self, name: str, payload: dict[str, Any] | None = None, path: str = "/") -> None:
        if name == HYDRATE:
            self._hydrates_sent += 1
            self._loop.call_soon_threadsafe(self._caught_up.clear)
        event = {
            "name": name,
            "payload": payload or {},
            "router_data": {"pathname": path, "asPath": path, "query": {}},
        }
        self._run(self._sio.emit("event", event, namespace=NAMESPACE))

    def send_raw(self, data: Any) -> None:
        self._run(self._sio.emit("event", data, namespace=NAMESPACE))

    def settle(self) -> list[dict[str, Any]]:
        """Wait until everything sent so far was handled; return what arrived since last time.

        Events of one tab are handled in order, so the reply to a hydrate sent last (the full
        state, which alone names the page-load state) proves every earlier event was handled:
        no clock involved.
        """
        self.send(HYDRATE)
        self._run(self._wait_caught_up())
        start, self._settled = self._settled, len(self.received)
        return self.received[start:]

    async def _wait_caught_up(self) -> None:
        async with asyncio.timeout(WAIT_S):
            while self._full_states < self._hydrates_sent:
                self._caught_up.clear()
                if self._full_states < self._hydrates_sent:
                    await self._caught_up.wait()

    def flush(self) -> None:
        """Wait until every frame the server queued to this socket so far has arrived.

        A ping's answer is queued behind them on the same socket; unlike :meth:`settle`, it
        works whatever token the socket holds and sends no event.
        """
        self._run(self._ping())

    async def _ping(self) -> None:
        async with asyncio.timeout(WAIT_S):
            await self._sio.emit("ping", namespace=NAMESPACE)
            await self._pongs.get()

    async def _wait_for(self, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        async with asyncio.timeout(WAIT_S):
            while True:
                update = await self._updates.get()
                if matches(update):
                    return update

    def wait_for(self, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        return self._run(self._wait_for(matches))

    def text(self) -> str:
        """Everything received so far, as one string to search for leaks."""
        return json.dumps(self.received)

    def close(self) -> None:
        if self._sio.connected:
            self._run(self._sio.disconnect())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
