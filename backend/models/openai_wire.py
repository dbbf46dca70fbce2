"""The OpenAI chat-completions wire format, as pure functions (no I/O).

``request_body`` turns a :class:`ModelRequest` into the JSON body of a streaming
``POST /chat/completions`` (``encode_body`` makes its bytes); :class:`StreamDecoder` turns the
SSE ``data:`` payloads of the response back into model events. Keeping both pure lets the
protocol rules be tested without a socket, and keeps :mod:`backend.models.openai_compatible`
about I/O only.

Decoding rules (what Ollama, vLLM, llama.cpp and hosted APIs have in common):

* Text arrives in ``choices[0].delta.content``; empty and ``null`` pieces are skipped.
* Tool calls arrive as fragments keyed by ``index``: the first fragment carries ``id`` and
  ``function.name``, later ones append to ``function.arguments``. Calls are emitted whole, in
  index order, when the response finishes; their arguments must decode to a JSON object.
* ``finish_reason`` may come on the last content chunk or on a chunk of its own; ``usage`` may
  come on a trailing chunk with no choices. ``[DONE]`` ends the stream.
* Every field is checked for its JSON type before use (``null`` counts as absent). A payload
  that is not JSON, a field of the wrong type at any level, or a negative or non-integer
  ``index`` or token count is a :class:`backend.errors.ModelProtocolError`, never an
  ``AttributeError`` from inside. Lone surrogates in text are kept (storage's rule).
* An ``error`` object in the stream, or a stream that ends without ``[DONE]`` and without a
  ``finish_reason``, is a :class:`backend.errors.ModelStreamError` (the reply broke off).
* The reply is capped at ``max_reply_bytes`` (UTF-8 bytes of text plus tool-call fragments):
  the text is cut at a character boundary, the marker of :func:`reply_cut_marker` follows,
  then ``Finish(REPLY_CUT_REASON)``; tool calls of a cut reply are dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.config import DEFAULT_MODEL_MAX_REPLY_BYTES
from backend.errors import ModelProtocolError, ModelStreamError
from backend.models.types import (
    REPLY_CUT_REASON,
    Finish,
    ModelEvent,
    ModelRequest,
    TextDelta,
    ToolCall,
    Usage,
    reply_cut_marker,
)
from backend.storage import well_formed_text

DONE_SENTINEL = "[DONE]"
MAX_TOOL_CALLS = 64  # per response; a server inventing thousands of indexes is broken


USAGE_OPTION = "stream_options"


def refuses_usage_request(status: int, error: str, body: dict[str, Any]) -> bool:
    """A strict server's answer to a field it does not know: a 400/422 naming the field."""
    return USAGE_OPTION in body and status in (400, 422) and USAGE_OPTION in error


def without_usage_request(body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != USAGE_OPTION}


def request_body(request: ModelRequest, *, default_model: str) -> dict[str, Any]:
    """The JSON body for a streaming chat-completions request."""
    messages: list[dict[str, Any]] = []
    system = request.system_prompt()
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        wire: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.tool_calls:
            wire["content"] = message.content or None
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id is not None:
            wire["tool_call_id"] = message.tool_call_id
        messages.append(wire)
    body: dict[str, Any] = {
        "model": request.model or default_model,
        "messages": messages,
        "stream": True,
        # Servers that support it end the stream with a ``usage`` chunk (no choices); the
        # rest ignore it (or refuse it: see refuses_usage_request), and the reply's usage is
        # then estimated (backend.models.usage).
        USAGE_OPTION: {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    """``body`` as UTF-8 JSON, text made well-formed by the storage text rule.

    A chat may hold a lone UTF-16 surrogate (a model's stream cut inside a pair, stored
    exactly); UTF-8 cannot carry it and servers reject or mangle a ``\\udXXX`` escape, so it
    is sent as U+FFFD (``backend.storage.well_formed_text``). Outside strings JSON text is ASCII, so
    the rule only ever touches string contents.
    """
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return well_formed_text(text).encode("utf-8")


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamDecoder:
    """Feed SSE data payloads in order; collect the events each one completes.

    ``feed`` returns the events a payload produced (text deltas at once; tool calls and the
    finish only at the end). ``finish`` is called when the byte stream ends and returns the
    remaining events or raises if the stream was cut. Once :attr:`done`, stop reading.
    """

    def __init__(
        self, *, provider: str = "", max_reply_bytes: int = DEFAULT_MODEL_MAX_REPLY_BYTES
    ) -> None:
        self._provider = provider
        self._max_reply_bytes = max_reply_bytes
        self._reply_bytes = 0
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._done = False
        self._emitted_final = False

    @property
    def done(self) -> bool:
        """True once the response is over (``[DONE]``, or cut at the size limit)."""
        return self._done

    def feed(self, data: str) -> list[ModelEvent]:
        if self._done:
            return []
        data = data.strip()
        if data == DONE_SENTINEL:
            self._done = True
            return self._final_events()
        if not data:
            return []
        chunk = self._json_object(data, "a payload of the model stream")
        error = chunk.get("error")
        if error is not None:
            detail = error.get("message") if isinstance(error, dict) else error
            raise ModelStreamError(
                f"model server reported an error mid-stream: {str(detail)[:300]}",
                provider=self._provider,
            )
        usage = _typed(chunk, "usage", dict, "chunk", self._error)
        if usage is not None:
            self._usage = Usage(
                prompt_tokens=self._count(usage, "prompt_tokens"),
                completion_tokens=self._count(usage, "completion_tokens"),
            )
        choices = _typed(chunk, "choices", list, "chunk", self._error)
        if not choices:
            return []
        choice = choices[0]  # we never ask for n > 1
        if not isinstance(choice, dict):
            raise self._error(f"model stream chunk has a malformed choice: {_kind(choice)}")
        events: list[ModelEvent] = []
        delta = _typed(choice, "delta", dict, "choice", self._error) or {}
        content = _typed(delta, "content", str, "delta", self._error)
        if content:
            events += self._text(content)
        for fragment in _typed(delta, "tool_calls", list, "delta", self._error) or ():
            if self._done:
                break
            events += self._absorb_tool_fragment(fragment)
        reason = _typed(choice, "finish_reason", str, "choice", self._error)
        if reason and not self._done:
            self._finish_reason = reason
        return events

    def finish(self) -> list[ModelEvent]:
        """The byte stream ended: flush, or raise if it ended mid-response."""
        if self._done:
            return []
        if self._finish_reason is None:
            raise ModelStreamError(
                "model stream ended before the response finished (no [DONE])",
                provider=self._provider,
            )
        # Some servers omit [DONE] after a finish_reason; the response itself is complete.
        self._done = True
        return self._final_events()

    def _json_object(self, raw: str, what: str) -> dict[str, Any]:
        try:
            value = json.loads(raw)
        # ValueError: also a number past Python's 4,300-digit limit; RecursionError: nesting.
        except (ValueError, RecursionError) as exc:
            raise self._error(f"{what} is not JSON: {raw[:120]!r}") from exc
        if not isinstance(value, dict):
            raise self._error(f"{what} is not a JSON object: {raw[:120]!r}")
        return value

    def _text(self, text: str) -> list[ModelEvent]:
        size = self._size(text, "text")
        room = self._max_reply_bytes - self._reply_bytes
        if size <= room:
            self._reply_bytes += size
            return [TextDelta(text)]
        # "ignore" drops only a character the cut would split: the kept text stays whole.
        return self._cut(text.encode("utf-8")[:room].decode("utf-8", "ignore"))

    def _cut(self, last_text: str) -> list[ModelEvent]:
        """The reply passed the size limit: end it here, visibly, without its tool calls
        (their arguments may be incomplete, and a cut reply should not act)."""
        self._done = self._emitted_final = True
        self._calls.clear()
        events: list[ModelEvent] = [TextDelta(last_text)] if last_text else []
        events.append(TextDelta(reply_cut_marker(self._max_reply_bytes)))
        events.append(Finish(REPLY_CUT_REASON, self._usage))
        return events

    def _absorb_tool_fragment(self, fragment: Any) -> list[ModelEvent]:
        if not isinstance(fragment, dict):
            raise self._error(
                f"model stream carried a malformed tool-call fragment: {fragment!r:.80}"
            )
        where = "tool-call fragment"
        call_id = _typed(fragment, "id", str, where, self._error)
        function = _typed(fragment, "function", dict, where, self._error) or {}
        name = _typed(function, "name", str, "tool-call function", self._error)
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send decoded arguments
            arguments = json.dumps(arguments)
        elif arguments is not None and not isinstance(arguments, str):
            raise self._error(
                f"model stream chunk has malformed tool-call 'arguments': {_kind(arguments)}"
            )
        index = fragment.get("index")
        if index is None:
            index = len(self._calls) if call_id else 0
        elif type(index) is not int or index < 0:  # bool is an int subclass: refuse it too
            raise self._error(
                f"model stream chunk has a malformed tool-call 'index': {index!r:.40}"
            )
        if index not in self._calls and len(self._calls) >= MAX_TOOL_CALLS:
            raise self._error(f"model stream sent more than {MAX_TOOL_CALLS} tool calls")
        partial = self._calls.setdefault(index, _PartialCall())
        size = sum(
            self._size(piece, "a tool call") for piece in (call_id, name, arguments) if piece
        )
        if size > self._max_reply_bytes - self._reply_bytes:
            return self._cut("")
        self._reply_bytes += size
        if call_id:
            partial.id = call_id
        if name:
            partial.name = name
        if arguments:
            partial.arguments.append(arguments)
        return []

    def _final_events(self) -> list[ModelEvent]:
        if self._emitted_final:
            return []
        self._emitted_final = True
        events: list[ModelEvent] = []
        for index in sorted(self._calls):
            partial = self._calls[index]
            if not partial.name:
                raise self._error(f"tool call #{index} arrived without a function name")
            raw = "".join(partial.arguments).strip() or "{}"
            arguments = self._json_object(raw, f"the arguments of tool call {partial.name!r}")
            self._size(json.dumps(arguments, ensure_ascii=False), "tool call arguments")
            events.append(ToolCall(partial.id or f"call_{index}", partial.name, arguments))
        reason = self._finish_reason or ("tool_calls" if self._calls else "stop")
        events.append(Finish(reason, self._usage))
        return events

    def _count(self, usage: dict[str, Any], key: str) -> int:
        value = usage.get(key)
        if value is None:
            return 0
        if type(value) is not int or value < 0:
            raise self._error(f"model stream chunk has a malformed usage '{key}': {value!r:.40}")
        return value

    def _size(self, text: str, what: str) -> int:
        """UTF-8 size of ``text``.

        A lone surrogate (``"\\ud83d"`` escapes: a pair cut between two chunks) is valid JSON
        and is counted, not refused: the runtime joins split pairs and storage applies its
        text rule (:func:`backend.storage.well_formed_text`).
        """
        if text.isascii():  # O(1) in CPython, and the common case
            return len(text)
        return len(text.encode("utf-8", "surrogatepass"))

    def _error(self, message: str) -> ModelProtocolError:
        return ModelProtocolError(message, provider=self._provider)


def _typed(
    container: dict[str, Any],
    key: str,
    kind: type,
    where: str,
    error: Callable[[str], ModelProtocolError],
) -> Any:
    """``container[key]`` if absent/``null`` (``None``) or of ``kind``; else a protocol error."""
    value = container.get(key)
    if value is None or isinstance(value, kind):
        return value
    raise error(
        f"model stream {where} has a malformed '{key}': expected {_KIND_NAMES[kind]}, "
        f"got {_kind(value)}"
    )


_KIND_NAMES: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _kind(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.40}"
