"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions streaming protocol.

It exists so the real client path (httpx, sockets, SSE framing, chunked transfer encoding,
timeouts) is exercised in tests and benches, not a mock of it. Each incoming request takes the
next scripted :class:`Reply` from a FIFO queue (or ``default`` when the queue is empty), and
is recorded in ``requests`` for assertions; ``responder`` may compute replies from the request
body instead. The replies are built by :mod:`tests.support.fake_replies`.

    with FakeOpenAI() as server:
        server.script(text("Hel", "lo"), tool_call("remember", {"fact": "x"}), http_error(500))
        settings = server.settings(tmp_path)   # CHATS_MODEL_BASE_URL points here
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from backend.config import Settings
from tests.support.deadlines import WAIT_S
from tests.support.fake_models import answer_models
from tests.support.fake_replies import Repeat, Reply, text

# ── the server ──────────────────────────────────────────────────────


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)
    sent_bytes: int = 0  # response body bytes written (before chunked framing)
    answered: threading.Event = field(default_factory=threading.Event)  # handler returned


def last_user_text(body: dict[str, Any]) -> str | None:
    """The text of a chat completion request's last user message (its parts joined)."""
    users = [
        m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"
    ]
    if not users:
        return None
    content = users[-1].get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


class FakeOpenAI:
    """Threaded local server; use as a context manager or call ``start``/``stop``."""

    def __init__(self, *, default: Reply | None = None) -> None:
        self.default = default or text("Hello from the fake model.")
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        # GET /models (tests/support/fake_models.py): what it lists, or the status it answers.
        self.models: list[str] = ["fake-model"]
        self.models_status = 200
        # Scripted replies in order, each with the user turn it answers (None: any request).
        self._queue: deque[tuple[Reply, str | None]] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # scripting

    def script(self, *replies: Reply, asked: str | None = None) -> FakeOpenAI:
        """Answer the next requests with ``replies``, in order. With ``asked``, only requests
        whose last user turn is that text take them: a title request of an earlier story's
        chat, sent when its reply ends, would otherwise take a reply scripted for this one."""
        with self._lock:
            self._queue.extend((reply, asked) for reply in replies)
        return self

    @contextlib.contextmanager
    def replying(self, default: Reply) -> Iterator[FakeOpenAI]:
        """Answer with ``default`` until the block ends, with no script or responder left over:
        the browser files that share one server each set their own reply this way."""
        previous = self.default
        self.default, self.responder = default, None
        with self._lock:
            self._queue.clear()
        try:
            yield self
        finally:
            self.default, self.responder = previous, None
            with self._lock:
                self._queue.clear()

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        asked = last_user_text(body)
        with self._lock:
            for entry in self._queue:
                reply, wanted = entry
                if wanted is None or wanted == asked:
                    self._queue.remove(entry)
                    return reply
        if self.responder is not None:
            return self.responder(body)
        return self.default

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # addresses

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def settings(self, data_dir: Path | str = "data", *, timeout_s: float = WAIT_S) -> Settings:
        """Application settings that point the model client at this server. The idle limit
        is a hang guard unless a test sets one to prove (a loaded machine can pause a reply
        for seconds: tests/support/deadlines.py)."""
        return Settings.from_env(
            {
                "CHATS_DATA_DIR": str(data_dir),
                "CHATS_MODEL_BASE_URL": self.base_url,
                "CHATS_MODEL_API_KEY": "test-key",
                "CHATS_MODEL": "fake-model",
                "CHATS_MODEL_TIMEOUT_S": str(timeout_s),
            }
        )

    # lifecycle

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(_Handler):
            server_owner = fake

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll interval
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)


class _Server(ThreadingHTTPServer):
    # The default backlog (5) refuses connections when a bench opens dozens at once.
    request_queue_size = 256


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_owner: FakeOpenAI
    recorded: RecordedRequest

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_POST(self) -> None:
        owner = self.server_owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        self.recorded = RecordedRequest(self.path, dict(self.headers.items()), body)
        owner.requests.append(self.recorded)
        try:
            self._answer(body)
        finally:
            self.recorded.answered.set()

    def do_GET(self) -> None:
        self.recorded = RecordedRequest(self.path, dict(self.headers.items()), {})
        self.server_owner.requests.append(self.recorded)
        try:
            answer_models(self)
        finally:
            self.recorded.answered.set()

    def _answer(self, body: dict[str, Any]) -> None:
        owner = self.server_owner
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_plain(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
            return
        reply = owner._next_reply(body)
        if reply.status != 200:
            self._send_plain(reply.status, reply.body)
            return
        # The client may go away (timeout, cancellation): nothing to clean up then.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._stream(reply, wants_usage=_wants_usage(body))

    def _send_plain(self, status: int, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _stream(self, reply: Reply, *, wants_usage: bool) -> None:
        owner = self.server_owner
        steps = list(reply.steps)
        # Delays before the first byte model "time to first token": headers wait for them.
        while steps and steps[0].kind == "sleep":
            owner._sleep(steps.pop(0).value)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for step in steps:
            if step.kind == "sleep":
                owner._sleep(step.value)
            elif step.kind == "hold":
                release, trickle = step.value
                while not (release.wait(0.2) or owner._stopping.is_set()):
                    self._write_chunk(f"data: {trickle}\n\n".encode())
            elif step.kind == "data" or (step.kind == "usage" and wants_usage):
                self._write_chunk(f"data: {step.value}\n\n".encode())
            elif step.kind == "raw":
                self._write_chunk(step.value)
            elif step.kind == "repeat":
                self._repeat(step.value)
            elif step.kind == "end":
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            elif step.kind == "close":
                self.wfile.flush()
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return

    def _repeat(self, repeat: Repeat) -> None:
        owner = self.server_owner
        count = 0
        while repeat.times is None or count < repeat.times:
            if owner._stopping.is_set():
                return
            if count and repeat.interval_s:
                owner._sleep(repeat.interval_s)
            self._write_chunk(repeat.block)
            count += 1

    def _write_chunk(self, data: bytes) -> None:
        # One write per chunk: separate small writes can meet Nagle + delayed ACK (40 ms).
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
        self.recorded.sent_bytes += len(data)


def _wants_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def main(argv: Sequence[str] | None = None) -> None:
    """Serve from a separate process (benches): one fixed reply, printed base URL, until EOF.

    ``python -m tests.support.fake_openai --first-delay-s 0.2`` prints the base URL on its
    first line and serves until its stdin closes. A separate process keeps the server's
    threads from competing with the code under measurement for the GIL.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--first-delay-s", type=float, default=0.0)
    parser.add_argument("--chunk-delay-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    reply = text(
        "Hello",
        " from",
        " the",
        " fake",
        " model.",
        first_delay_s=args.first_delay_s,
        delay_s=args.chunk_delay_s,
    )
    with FakeOpenAI(default=reply) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
