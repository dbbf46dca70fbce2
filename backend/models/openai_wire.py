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
* A payload that is not JSON, an ``error`` object in the stream, or a stream that ends without
  ``[DONE]`` and without a ``finish_reason`` is a :class:`backend.errors.ModelStreamError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from backend.errors import ModelStreamError
from backend.models.types import Finish, ModelEvent, ModelRequest, TextDelta, ToolCall, Usage
from backend.storage import well_formed_text

DONE_SENTINEL = "[DONE]"


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
    remaining events or raises if the stream was cut.
    """

    def __init__(self, *, provider: str = "") -> None:
        self._provider = provider
        self._calls: dict[int, _PartialCall] = {}
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._done = False
        self._emitted_final = False

    @property
    def done(self) -> bool:
        """True once ``[DONE]`` arrived: nothing after it is read."""
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
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ModelStreamError(
                f"model stream carried a payload that is not JSON: {data[:120]!r}",
                provider=self._provider,
            ) from exc
        if not isinstance(chunk, dict):
            raise self._error(f"model stream carried a non-object payload: {data[:120]!r}")
        if "error" in chunk:
            error = chunk["error"]
            detail = error.get("message") if isinstance(error, dict) else error
            raise self._error(f"model server reported an error mid-stream: {detail}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = Usage(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
            )
        events: list[ModelEvent] = []
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise self._error("model stream chunk has a malformed 'choices' field")
        for choice in choices[:1]:  # we never ask for n > 1
            if not isinstance(choice, dict):
                raise self._error("model stream chunk has a malformed choice")
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(TextDelta(content))
            for fragment in delta.get("tool_calls") or []:
                self._absorb_tool_fragment(fragment)
            reason = choice.get("finish_reason")
            if reason:
                self._finish_reason = str(reason)
        return events

    def finish(self) -> list[ModelEvent]:
        """The byte stream ended: flush, or raise if it ended mid-response."""
        if self._done:
            return []
        if self._finish_reason is None:
            raise self._error("model stream ended before the response finished (no [DONE])")
        # Some servers omit [DONE] after a finish_reason; the response itself is complete.
        self._done = True
        return self._final_events()

    def _absorb_tool_fragment(self, fragment: Any) -> None:
        if not isinstance(fragment, dict):
            raise self._error("model stream carried a malformed tool-call fragment")
        index = fragment.get("index", len(self._calls) if fragment.get("id") else 0)
        partial = self._calls.setdefault(int(index), _PartialCall())
        if fragment.get("id"):
            partial.id = str(fragment["id"])
        function = fragment.get("function") or {}
        if function.get("name"):
            partial.name = str(function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            partial.arguments.append(arguments)
        elif isinstance(arguments, dict):  # a few servers send decoded arguments
            partial.arguments.append(json.dumps(arguments))

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
            try:
                arguments = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise self._error(
                    f"tool call {partial.name!r} has arguments that are not JSON: {raw[:120]!r}"
                ) from exc
            if not isinstance(arguments, dict):
                raise self._error(f"tool call {partial.name!r} arguments are not a JSON object")
            events.append(ToolCall(partial.id or f"call_{index}", partial.name, arguments))
        reason = self._finish_reason or ("tool_calls" if self._calls else "stop")
        events.append(Finish(reason, self._usage))
        return events

    def _error(self, message: str) -> ModelStreamError:
        return ModelStreamError(message, provider=self._provider)
