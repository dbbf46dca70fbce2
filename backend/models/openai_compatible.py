"""Streaming client for any OpenAI-compatible ``/chat/completions`` server.

Works against Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp's server and hosted
APIs: it only relies on the common subset of the protocol (see
:mod:`backend.models.openai_wire`). This module owns the I/O and the error mapping:

* HTTP status >= 400 → :class:`ModelHTTPError` (status and body kept for the UI).
* No connection within ``connect_timeout_s``, or no bytes for ``read_timeout_s`` between two
  chunks (an idle timeout, not a total deadline: a long answer that keeps streaming is fine)
  → :class:`ModelTimeoutError`.
* A body that is not the protocol, or that breaks off before the response finished →
  :class:`ModelStreamError`. Unreachable server → :class:`ModelError`.

One pooled ``httpx.AsyncClient`` per event loop: a client is bound to the loop that created
it, and the provider is shared by conversations that may run on different loops (tests, the
bench, the app). Creating a client per call looked harmless but costs an SSL context each
time (tens of milliseconds of CPU): at 20 concurrent conversations that alone serialised
replies behind the CPU.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx

from backend.config import Settings
from backend.errors import ModelError, ModelHTTPError, ModelStreamError, ModelTimeoutError
from backend.models.openai_wire import StreamDecoder, encode_body, request_body
from backend.models.types import ModelEvent, ModelMessage, ModelRequest, TextDelta

DEFAULT_CONNECT_TIMEOUT_S = 10.0
MAX_ERROR_BODY_BYTES = 4096


@dataclass(frozen=True)
class OpenAICompatibleProvider:
    """A model reached over HTTP. Immutable; safe to share."""

    base_url: str
    model: str
    api_key: str = ""
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    read_timeout_s: float = 60.0
    offline: bool = False
    _clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False
    )

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleProvider:
        return cls(
            base_url=settings.model_base_url.rstrip("/"),
            model=settings.model_name or "default",
            api_key=settings.model_api_key,
            connect_timeout_s=min(DEFAULT_CONNECT_TIMEOUT_S, settings.model_timeout_s),
            read_timeout_s=settings.model_timeout_s,
        )

    @property
    def name(self) -> str:
        return self.model

    @property
    def label(self) -> str:
        host = httpx.URL(self.base_url).host or self.base_url
        return f"{self.model} ({host})"

    def retrieval_query(self, user_text: str) -> str | None:
        return None

    async def complete(self, prompt: str) -> str:
        request = ModelRequest(messages=(ModelMessage("user", prompt),))
        pieces = [e.text async for e in self.stream(request) if isinstance(e, TextDelta)]
        return "".join(pieces).strip()

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            timeout = httpx.Timeout(
                connect=self.connect_timeout_s,
                read=self.read_timeout_s,
                write=self.read_timeout_s,
                pool=self.connect_timeout_s,
            )
            client = httpx.AsyncClient(timeout=timeout)
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close this event loop's connection pool (the runtime calls it on shutdown)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        body = request_body(request, default_model=self.model)
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        decoder = StreamDecoder(provider=self.model)
        try:
            async with self._client().stream(
                "POST", url, content=encode_body(body), headers=headers
            ) as response:
                if response.status_code >= 400:
                    raw = await _read_capped(response)
                    raise ModelHTTPError(
                        response.status_code,
                        raw.decode("utf-8", "replace"),
                        provider=self.model,
                    )
                async for data in _sse_data(response.aiter_lines()):
                    for event in decoder.feed(data):
                        yield event
                    if decoder.done:
                        return
            for event in decoder.finish():
                yield event
        except httpx.TimeoutException as exc:
            raise ModelTimeoutError(
                f"model server at {self.base_url} did not answer in time "
                f"({type(exc).__name__}; idle limit {self.read_timeout_s:g}s)",
                provider=self.model,
            ) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise ModelStreamError(
                f"model stream from {self.base_url} broke off: {exc}", provider=self.model
            ) from exc
        except httpx.ConnectError as exc:
            raise ModelError(
                f"cannot reach the model server at {self.base_url}: {exc}", provider=self.model
            ) from exc
        except httpx.HTTPError as exc:
            raise ModelError(
                f"model request to {self.base_url} failed: {exc}", provider=self.model
            ) from exc


async def _read_capped(response: httpx.Response) -> bytes:
    """The start of an error body; a misbehaving server must not make us buffer megabytes."""
    collected = bytearray()
    async for chunk in response.aiter_bytes():
        collected += chunk
        if len(collected) >= MAX_ERROR_BODY_BYTES:
            break
    return bytes(collected[:MAX_ERROR_BODY_BYTES])


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Server-sent events → the ``data`` of each event (multi-line data joined by ``\\n``)."""
    buffer: list[str] = []
    async for line in lines:
        if not line:
            if buffer:
                yield "\n".join(buffer)
                buffer = []
            continue
        if line.startswith(":"):  # comment / keep-alive
            continue
        field_name, _, value = line.partition(":")
        if field_name == "data":
            buffer.append(value[1:] if value.startswith(" ") else value)
    if buffer:
        yield "\n".join(buffer)
