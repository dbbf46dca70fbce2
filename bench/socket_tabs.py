"""Tabs without a browser: socket.io clients that speak Reflex's protocol, as a page does.

A :class:`Tab` connects with a person's session cookie, hydrates, links the sidebar and opens
a chat (the events a page load sends, see ``tests/support/raw_client.py``); every update it
receives goes to its hooks. Used by ``bench/load_bench.py`` (hundreds of tabs on one loop) and
``bench/test_ws_soak.py`` (thousands opened and closed).
"""

from __future__ import annotations

import asyncio
import gc
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import socketio

from backend.chats import Chats
from backend.config import parse_storage, storage_root
from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.states.conversation import ChatTabState
from chatsapp.states.directory import SharedDirectoryState
from tests.support.app_server import AppServer
from tests.support.raw_client import HYDRATE, NAMESPACE

TIMEOUT_S = 120.0
CONNECT_AT_ONCE = 20


def event(state: type, handler: str) -> str:
    return f"{state.get_full_name()}.{handler}"


class ClientCollector:
    """The bench's own garbage collector, kept out of the timings.

    With 400 tabs' objects on this loop one full collection here took up to 176 ms, and a frame
    that arrives during it is timed as if the server were late. ``settle`` collects, then
    freezes what the connected tabs hold (they live for the whole run, so later collections
    skip them); ``longest_ms`` is the longest collection since, printed with the phase.
    """

    def __init__(self) -> None:
        self._began = 0.0
        self.longest_s = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.longest_s = max(self.longest_s, time.perf_counter() - self._began)

    def settle(self) -> None:
        gc.collect()
        gc.freeze()
        self.longest_s = 0.0

    @property
    def longest_ms(self) -> float:
        return self.longest_s * 1000


@dataclass
class Tab:
    """One socket.io client on the shared loop; every update goes to ``on_update`` hooks."""

    backend_url: str
    session_token: str
    path: str
    client_token: str = field(default_factory=lambda: str(uuid.uuid4()))
    deflate: bool = True  # offer permessage-deflate, as Chromium and Firefox do
    hooks: list[Callable[[dict[str, Any], float], None]] = field(default_factory=list)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    hydrates: tuple[int, int] = (0, 0)  # sent, answered: settled once every one is answered
    sio: socketio.AsyncClient = field(init=False)

    def __post_init__(self) -> None:
        # aiohttp's compress=15 offers "permessage-deflate; client_max_window_bits", a
        # browser's offer word for word.
        options = {"compress": 15} if self.deflate else {}
        self.sio = socketio.AsyncClient(reconnection=False, websocket_extra_options=options)
        self.sio.on("event", self._on_update, namespace=NAMESPACE)

    async def _on_update(self, update: Any) -> None:
        at = time.monotonic()
        parsed = json.loads(update) if isinstance(update, str) else update
        delta = parsed.get("delta") or {}
        if any(key.endswith("on_load_internal_state") for key in delta):
            sent, answered = self.hydrates
            self.hydrates = (sent, answered + 1)
            if answered + 1 >= sent:
                self.settled.set()  # the last hydrate answered: everything before was handled
        for hook in list(self.hooks):
            hook(parsed, at)

    async def emit(self, name: str, payload: dict[str, Any] | None = None) -> None:
        if name == HYDRATE:
            sent, answered = self.hydrates
            self.hydrates = (sent + 1, answered)
            self.settled.clear()
        router = {"pathname": self.path, "asPath": self.path, "query": {}}
        message = {"name": name, "payload": payload or {}, "router_data": router}
        await self.sio.emit("event", message, namespace=NAMESPACE)

    async def open(self, *, settle: bool = True) -> None:
        """Connect and open the chat as a page load does; ``settle=False`` leaves at once."""
        await self.sio.connect(
            f"{self.backend_url}?token={self.client_token}",
            socketio_path=NAMESPACE,
            namespaces=[NAMESPACE],
            transports=["websocket"],
            headers={"Cookie": f"{SESSION_COOKIE}={self.session_token}"},
            wait_timeout=TIMEOUT_S,
        )
        await self.emit(HYDRATE)
        await self.emit(event(SharedDirectoryState, "link"))
        await self.emit(event(ChatTabState, "open_chat"))
        if settle:
            await self.settle()

    async def until_hydrated(self) -> None:
        """Until the first hydrate is answered: the page shows, its chat may still be opening."""
        async with asyncio.timeout(TIMEOUT_S):
            while self.hydrates[1] == 0:
                await asyncio.sleep(0.005)

    async def settle(self) -> None:
        await self.emit(HYDRATE)
        await asyncio.wait_for(self.settled.wait(), TIMEOUT_S)

    async def close(self) -> None:
        if self.sio.connected:
            await self.sio.disconnect()


@dataclass
class Person:
    username: str
    user_id: str
    token: str
    chat_id: str
    tabs: list[Tab] = field(default_factory=list)


def make_person(app: AppServer, username: str) -> Person:
    token = app.session_token(username)
    user_id = app.user_id(username)
    # The app's own root: its data folder, or on PostgreSQL the logical root every node names.
    with Chats(storage_root(app.data_dir, parse_storage(app.storage)), user_id) as chats:
        chat_id = chats.create_chat(f"Chat of {username}").id
    return Person(username, user_id, token, chat_id)


async def connect(
    app: AppServer, person: Person, count: int, errors: list[str], *, deflate: bool = True
) -> None:
    for _ in range(count):
        tab = Tab(app.backend_url, person.token, f"/chat/{person.chat_id}", deflate=deflate)
        try:
            await tab.open()
            person.tabs.append(tab)
        except Exception as exc:  # counted and reported: the run goes on
            errors.append(f"connect {person.username}: {exc!r}")


async def connect_all(
    app: AppServer, people: list[Person], per: int, errors: list[str], *, deflate: bool = True
) -> None:
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)

    async def one(person: Person) -> None:
        async with gate:
            await connect(app, person, per, errors, deflate=deflate)

    await asyncio.gather(*(one(person) for person in people))
