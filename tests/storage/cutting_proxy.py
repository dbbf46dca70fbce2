"""A TCP relay between the app and PostgreSQL that can lose a message the way a network does.

``lose_requests()``: the next bytes any open connection sends are dropped and the app's
socket is closed, while the server's side stays open, so the server never hears them (a
``COMMIT`` that never arrived: the transaction stays open there, idle, as after a real cut).
``lose_replies()``: requests still reach the server, but the next reply is dropped and the
app's socket closed (a ``COMMIT`` that ran, whose answer never came back).
``refuse_new()``: new connections are closed at once (no primary reachable).
``go_down()`` / ``come_back()``: the server as the app sees it stopping and starting again:
every open connection is cut on both sides (the server rolls back what was in flight) and new
ones are refused until it comes back.
Both ``lose_*`` apply to the connections open when they are called; later ones pass.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from urllib.parse import urlsplit, urlunsplit


class _Link:
    def __init__(self, app: socket.socket, server: socket.socket) -> None:
        self.app = app
        self.server = server
        self.lose: str | None = None  # "requests" or "replies"
        self.lost_bytes = 0

    def pump(self, source: socket.socket, target: socket.socket, direction: str) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if data and self.lose == direction:
                self.lost_bytes += len(data)
                with suppress(OSError):
                    self.app.shutdown(socket.SHUT_RDWR)
                self.app.close()
                return
            if not data:
                with suppress(OSError):
                    target.shutdown(socket.SHUT_WR)
                return
            try:
                target.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        for sock in (self.app, self.server):
            with suppress(OSError):
                sock.close()


class CuttingProxy:
    """Relays ``127.0.0.1:<port>`` to the server of ``url`` (see the module docstring)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._url = parts
        self._target = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._links: list[_Link] = []
        self._lock = threading.Lock()
        self._refusing = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """``url`` through this relay."""
        netloc = self._url.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        return urlunsplit(
            self._url._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host)
        )

    def lose_requests(self) -> None:
        self._set("requests")

    def lose_replies(self) -> None:
        self._set("replies")

    def refuse_new(self, refusing: bool = True) -> None:
        self._refusing = refusing

    def go_down(self) -> None:
        self._refusing = True
        with self._lock:
            links, self._links = self._links, []
        for link in links:
            link.close()

    def come_back(self) -> None:
        self._refusing = False

    @property
    def lost_bytes(self) -> int:
        with self._lock:
            return sum(link.lost_bytes for link in self._links)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for link in self._links:
                link.close()

    def _set(self, direction: str) -> None:
        with self._lock:
            for link in self._links:
                link.lose = direction

    def _accept(self) -> None:
        while True:
            try:
                app, _ = self._listener.accept()
            except OSError:
                return
            if self._refusing:
                app.close()
                continue
            server = socket.create_connection(self._target)
            link = _Link(app, server)
            with self._lock:
                self._links.append(link)
            threading.Thread(target=link.pump, args=(app, server, "requests"), daemon=True).start()
            threading.Thread(target=link.pump, args=(server, app, "replies"), daemon=True).start()
