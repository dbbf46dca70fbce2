"""The replies a :class:`tests.support.fake_openai.FakeOpenAI` server can be scripted with.

Each builder returns a :class:`Reply`, the steps the server takes while answering.

Replies: :func:`text` (chunks, per-chunk and first-byte delays), :func:`held` (a reply that
waits mid-way until the test releases it), :func:`tool_call`,
:func:`http_error`, :func:`hang` (stall after some chunks: client idle timeouts),
:func:`cut` (stop mid-stream: unterminated chunked body, or a clean end without ``[DONE]``),
:func:`malformed` (a payload that is not JSON).

Misbehaviours for the client's limits: :func:`payloads` (any ``data:`` payloads or raw bytes,
e.g. a ``delta`` that is a string, or bytes that are not UTF-8), :func:`huge_line` (one SSE
line of any size), :func:`keep_alive_forever` (comments and nothing else),
:func:`endless` (a slow reply that never finishes), :func:`huge_reply` (valid text chunks
adding up to any size). The endless ones stop when the client goes away or the server stops;
the big ones repeat one small block, so the server itself stays small in memory (tests
measure the client's memory in the same process).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Step:
    """One thing the server does while answering: sleep, send an SSE event, or stop."""

    # "usage" is a "data" step sent only when the request asked for it (stream_options).
    kind: str  # "sleep" | "hold" | "data" | "usage" | "raw" | "repeat" | "end" | "close"
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


def held(before: Sequence[str], release: threading.Event, after: Sequence[str]) -> Reply:
    """Stream ``before``, wait until ``release`` is set (or the server stops, or the client
    leaves), then stream ``after`` and finish: a reply surely still streaming while a story
    acts on it, however slow the machine."""
    steps = [_opening(), *(Step("data", _chunk({"content": piece})) for piece in before)]
    # While it waits, a space every 0.2 s: the app shows buffered text on its next event
    # (chatsapp's run pump), so a reply that went fully silent could show nothing at all.
    steps.append(Step("hold", (release, _chunk({"content": " "}))))
    steps += [Step("data", _chunk({"content": piece})) for piece in after]
    steps += [Step("data", _chunk({}, "stop")), Step("data", "[DONE]"), Step("end")]
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
