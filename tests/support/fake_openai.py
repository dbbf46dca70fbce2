"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions streaming protocol.

It exists so the real client path (httpx, sockets, SSE framing, chunked transfer encoding,
timeouts) is exercised in tests and benches, not a mock of it. Each incoming request takes the
next scripted :class:`Reply` from a FIFO queue (or ``default`` when the queue is empty), and
is recorded in ``requests`` for assertions.

    with FakeOpenAI() as server:
        server.script(text("Hel", "lo"), tool_call("remember", {"fact": "x"}), http_error(500))
        settings = server.settings(tmp_path)   # CHATS_MODEL_BASE_URL points here

Replies: :func:`text` (chunks, per-chunk and first-byte delays), :func:`tool_call`,
:func:`http_error`, :func:`hang` (stall after some chunks: client idle timeouts),
:func:`cut` (stop mid-stream: unterminated chunked body, or a clean end without ``[DONE]``),
:func:`malformed` (a payload that is not JSON). ``responder`` may compute replies from the
request body instead of a queue.

Misbehaviours for the client's limits: :func:`payloads` (any ``data:`` payloads or raw bytes,
e.g. a ``delta`` that is a string, or bytes that are not UTF-8), :func:`huge_line` (one SSE
line of any size), :func:`keep_alive_forever` (comments and nothing else),
:func:`endless` (a slow reply that never finishes), :func:`huge_reply` (valid text chunks
adding up to any size). The endless ones stop when the client goes away or the server stops;
the big ones repeat one small block, so the server itself stays small in memory (tests
measure the client's memory in the same process).
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
from tests.support.fake_models import answer_models

# ── scripted replies ────────────────────────────────────────────────


@dataclass(frozen=True)
class Step:
    """One thing the server does while answering: sleep, send an SSE event, or stop."""

    # "usage" is a "data" step sent only when the request asked for it (stream_options).
    kind: str  # "sleep" | "data" | "usage" | "raw" | "repeat" | "end" | "close"
    value: Any = None


@dataclass(frozen=True)
class Repeat:
    """Write ``block`` (raw body bytes) ``times`` times (``None``: until the client leaves)."""

    block: bytes
    times: int | None = None
    interval_s: float = 0.0


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: str = ""  # for non-200 replies
    steps: tuple[Step, ...] = ()


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
    )


def _opening() -> Step:
    return Step("data", _chunk({"role": "assistant", "content": ""}))


def text(
    *chunks: str,
    delay_s: float = 0.0,
    first_delay_s: float = 0.0,
    finish_reason: str = "stop",
    usage: dict[str, int] | None = None,
    done: bool = True,
) -> Reply:
    """Stream ``chunks`` as content deltas, then ``finish_reason`` and ``[DONE]``.

    ``usage`` is sent as a trailing chunk with no choices, as OpenAI does, and only to a
    request with ``stream_options.include_usage`` (the real servers' rule).
    """
    steps: list[Step] = []
    if first_delay_s:
        steps.append(Step("sleep", first_delay_s))
    steps.append(_opening())
    for index, piece in enumerate(chunks):
        if index and delay_s:
            steps.append(Step("sleep", delay_s))
        steps.append(Step("data", _chunk({"content": piece})))
    steps.append(Step("data", _chunk({}, finish_reason)))
    if usage is not None:
        trailer = {"id": "chatcmpl-fake", "choices": [], "usage": usage}
        steps.append(Step("usage", json.dumps(trailer)))
    if done:
        steps.append(Step("data", "[DONE]"))
    steps.append(Step("end"))
    return Reply(steps=tuple(steps))


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]
    id: str = ""


def tool_call(
    name: str,
    arguments: dict[str, Any],
    *,
    call_id: str = "call_1",
    text_before: str = "",
    fragments: int = 3,
) -> Reply:
    """One tool call whose JSON arguments arrive split over ``fragments`` chunks."""
    calls = [Call(name, arguments, call_id)]
    return tool_calls(calls, text_before=text_before, fragments=fragments)


def tool_calls(calls: Sequence[Call], *, text_before: str = "", fragments: int = 3) -> Reply:
    steps = [_opening()]
    if text_before:
        steps.append(Step("data", _chunk({"content": text_before})))
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{index + 1}"
        steps.append(
            Step(
                "data",
                _chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": ""},
                            }
                        ]
                    }
                ),
            )
        )
        raw = json.dumps(call.arguments)
        size = max(1, -(-len(raw) // max(1, fragments)))
        for start in range(0, len(raw), size):
            piece = raw[start : start + size]
            steps.append(
                Step(
                    "data",
                    _chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                )
            )
    steps += [Step("data", _chunk({}, "tool_calls")), Step("data", "[DONE]"), Step("end")]
    return Reply(steps=tuple(steps))


def http_error(status: int = 500, message: str = "internal error") -> Reply:
    body = json.dumps({"error": {"message": message, "type": "server_error", "code": status}})
    return Reply(status=status, body=body)


def hang(*chunks: str, seconds: float = 30.0) -> Reply:
    """Send ``chunks`` then go silent for ``seconds`` (released early when the server stops)."""
    steps = [_opening(), *(Step("data", _chunk({"content": c})) for c in chunks)]
    steps += [Step("sleep", seconds), Step("close")]
    return Reply(steps=tuple(steps))


def cut(*chunks: str, clean: bool = False) -> Reply:
    """Send ``chunks`` then stop with no ``finish_reason`` and no ``[DONE]``.

    ``clean=False`` drops the socket mid-body (an unterminated chunked transfer, as when a
    server process dies); ``clean=True`` terminates the HTTP body properly, so only the
    protocol-level ending is missing.
    """
    steps = [_opening(), *(Step("data", _chunk({"content": c})) for c in chunks)]
    steps.append(Step("end" if clean else "close"))
    return Reply(steps=tuple(steps))


def malformed(*chunks: str) -> Reply:
    steps = [_opening(), *(Step("data", _chunk({"content": c})) for c in chunks)]
    steps += [Step("data", '{"choices": [ this is not json'), Step("end")]
    return Reply(steps=tuple(steps))


def payloads(*items: str | bytes, done: bool = True) -> Reply:
    """Send each ``str`` as one ``data:`` event and each ``bytes`` as raw body bytes."""
    steps = [_opening()]
    for item in items:
        steps.append(Step("raw", item) if isinstance(item, bytes) else Step("data", item))
    if done:
        steps.append(Step("data", "[DONE]"))
    steps.append(Step("end"))
    return Reply(steps=tuple(steps))


def huge_line(size_bytes: int, *, block_bytes: int = 64 * 1024) -> Reply:
    """One ``data:`` line of about ``size_bytes``: a valid chunk whose text is one huge string."""
    prefix = b'data: {"choices": [{"delta": {"content": "'
    block = b"x" * block_bytes
    return Reply(
        steps=(
            _opening(),
            Step("raw", prefix),
            Step("repeat", Repeat(block, times=max(1, size_bytes // block_bytes))),
            Step("raw", b'"}}]}\n\n'),
            Step("data", "[DONE]"),
            Step("end"),
        )
    )


def keep_alive_forever(*chunks: str, interval_s: float = 0.02) -> Reply:
    """Send ``chunks``, then only ``: keep-alive`` comments (and blank lines), never data."""
    steps = [_opening(), *(Step("data", _chunk({"content": c})) for c in chunks)]
    steps.append(Step("repeat", Repeat(b": keep-alive\n\n", interval_s=interval_s)))
    steps.append(Step("close"))
    return Reply(steps=tuple(steps))


def endless(piece: str = "and on ", *, interval_s: float = 0.02) -> Reply:
    """A reply that keeps sending ``piece`` every ``interval_s`` and never finishes."""
    block = f"data: {_chunk({'content': piece})}\n\n".encode()
    steps = (_opening(), Step("repeat", Repeat(block, interval_s=interval_s)), Step("close"))
    return Reply(steps=steps)


def huge_reply(size_bytes: int, *, piece_bytes: int = 16 * 1024) -> Reply:
    """Valid text chunks of ``piece_bytes`` each, adding up to ``size_bytes``, then a finish."""
    block = f"data: {_chunk({'content': 'y' * piece_bytes})}\n\n".encode()
    return Reply(
        steps=(
            _opening(),
            Step("repeat", Repeat(block, times=max(1, size_bytes // piece_bytes))),
            Step("data", _chunk({}, "stop")),
            Step("data", "[DONE]"),
            Step("end"),
        )
    )


# ── the server ──────────────────────────────────────────────────────


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.monotonic)
    sent_bytes: int = 0  # response body bytes written (before chunked framing)
    answered: threading.Event = field(default_factory=threading.Event)  # handler returned


class FakeOpenAI:
    """Threaded local server; use as a context manager or call ``start``/``stop``."""

    def __init__(self, *, default: Reply | None = None) -> None:
        self.default = default or text("Hello from the fake model.")
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        # GET /models (tests/support/fake_models.py): what it lists, or the status it answers.
        self.models: list[str] = ["fake-model"]
        self.models_status = 200
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # scripting

    def script(self, *replies: Reply) -> FakeOpenAI:
        with self._lock:
            self._queue.extend(replies)
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
        with self._lock:
            if self._queue:
                return self._queue.popleft()
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

    def settings(self, data_dir: Path | str = "data", *, timeout_s: float = 5.0) -> Settings:
        """Application settings that point the model client at this server."""
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
