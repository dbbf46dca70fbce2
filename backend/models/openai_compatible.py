"""Streaming client for any OpenAI-compatible ``/chat/completions`` server.

Works against Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp's server and hosted
APIs: it only relies on the common subset of the protocol (see
:mod:`backend.models.openai_wire`). This module owns the I/O, the limits and the error
mapping. The server is untrusted input: whatever it sends, the reply ends in bounded time
and memory, with an event or a ``ModelError``:

* HTTP status >= 400 → :class:`ModelHTTPError` (status and the body's start kept for the UI).
* Idle limit (``idle_timeout_s``, setting ``CHATS_MODEL_TIMEOUT_S``): the longest wait for
  the next *data* event, from the request to the first one and between two. SSE comments
  (``: keep-alive``) and blank lines do not count, or a server could keep a dead reply open
  forever. Time the caller spends between two events does not count either: the limit is
  about the server, not a slow consumer. Total limit (``total_timeout_s``): the whole reply,
  from the request on. Either → :class:`ModelTimeoutError` whose ``limit`` says which.
* Size limits: no SSE line is buffered past ``max_line_bytes`` (see
  :mod:`backend.models.sse`) → :class:`ModelProtocolError`; a reply past ``max_reply_bytes``
  is cut with a visible marker and ``Finish(REPLY_CUT_REASON)`` (not an error), and the
  response is closed at once.
* A body that is not the protocol → :class:`ModelProtocolError`; one that breaks off before
  the response finished → :class:`ModelStreamError`. Unreachable server → :class:`ModelError`.

One pooled ``httpx.AsyncClient`` per event loop: a client is bound to the loop that created
it, and the provider is shared by conversations that may run on different loops (tests, the
bench, the app). Creating a client per call looked harmless but costs an SSL context each
time (tens of milliseconds of CPU): at 20 concurrent conversations that alone serialised
replies behind the CPU.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from backend.config import (
    DEFAULT_MODEL_MAX_LINE_BYTES,
    DEFAULT_MODEL_MAX_REPLY_BYTES,
    DEFAULT_MODEL_TIMEOUT_S,
    DEFAULT_MODEL_TOTAL_TIMEOUT_S,
    Settings,
)
from backend.errors import ModelError, ModelHTTPError, ModelStreamError, ModelTimeoutError
from backend.models.deadlines import Limit, ReplyDeadlines
from backend.models.openai_wire import (
    USAGE_OPTION,
    StreamDecoder,
    encode_body,
    refuses_usage_request,
    request_body,
    without_usage_request,
)
from backend.models.sse import SSEParser
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
    idle_timeout_s: float = DEFAULT_MODEL_TIMEOUT_S
    total_timeout_s: float = DEFAULT_MODEL_TOTAL_TIMEOUT_S
    max_line_bytes: int = DEFAULT_MODEL_MAX_LINE_BYTES
    max_reply_bytes: int = DEFAULT_MODEL_MAX_REPLY_BYTES
    offline: bool = False
    # The idle and total limits' clock (monotonic seconds): the event loop's unless a test
    # gives one that can jump ahead (backend.models.deadlines).
    clock: Callable[[], float] | None = field(default=None, repr=False, compare=False)
    # Learned from the server: it refuses the usage request (see ``_open``). Shared by copies.
    _refusals: set[str] = field(default_factory=set, init=False, repr=False, compare=False)
    _clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False
    )

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleProvider:
        return cls.for_endpoint(
            settings,
            base_url=settings.model_base_url,
            model=settings.model_name or "default",
            api_key=settings.model_api_key,
        )

    @classmethod
    def for_endpoint(
        cls, settings: Settings, *, base_url: str, model: str, api_key: str
    ) -> OpenAICompatibleProvider:
        """A client of any endpoint, with the configured limits (``backend.endpoints``)."""
        return cls(
            base_url=base_url.rstrip("/"),
            model=model,
            api_key=api_key,
            connect_timeout_s=min(DEFAULT_CONNECT_TIMEOUT_S, settings.model_timeout_s),
            idle_timeout_s=settings.model_timeout_s,
            total_timeout_s=settings.model_total_timeout_s,
            max_line_bytes=settings.model_max_line_bytes,
            max_reply_bytes=settings.model_max_reply_bytes,
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
            # The socket-level read limit is the idle limit too: a silent socket has no data
            # events either. stream() adds the limits a socket cannot see.
            timeout = httpx.Timeout(
                connect=self.connect_timeout_s,
                read=self.idle_timeout_s,
                write=self.idle_timeout_s,
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
        # identity: a compressed body could inflate past every limit in a single read.
        headers = {
            "Accept": "text/event-stream",
            "Accept-Encoding": "identity",
            "Content-Type": "application/json",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        decoder = StreamDecoder(provider=self.model, max_reply_bytes=self.max_reply_bytes)
        parser = SSEParser(max_line_bytes=self.max_line_bytes, provider=self.model)
        deadlines = ReplyDeadlines(
            self.idle_timeout_s, self.total_timeout_s, self._timeout_error, self.clock
        )
        client = self._client()
        try:
            response = await self._open(client, url, body, headers, deadlines)
            try:
                chunks = response.aiter_bytes()
                while (chunk := await deadlines.read(anext(chunks, None))) is not None:
                    payloads = parser.feed(chunk)
                    for data in payloads:
                        for event in decoder.feed(data):
                            yield event
                        if decoder.done:
                            return  # finally closes the response: nothing more is read
                    if payloads:
                        deadlines.data_arrived()  # after the caller took the events
                for data in parser.close():
                    for event in decoder.feed(data):
                        yield event
                for event in decoder.finish():
                    yield event
            finally:
                await response.aclose()
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise ModelTimeoutError(
                f"model server at {self.base_url} did not accept a connection within "
                f"{self.connect_timeout_s:g}s",
                provider=self.model,
                limit="connect",
                seconds=self.connect_timeout_s,
            ) from exc
        except httpx.TimeoutException as exc:  # the socket was silent: no data either
            raise self._timeout_error("idle") from exc
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
        finally:
            deadlines.close()

    async def _open(
        self,
        client: httpx.AsyncClient,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        deadlines: ReplyDeadlines,
    ) -> httpx.Response:
        """POST the request: a streaming response, else ``ModelHTTPError``. A server that
        refuses ``stream_options`` (strict servers reject fields they do not know) is asked
        once more without it, and not offered it again: its replies' usage is estimated."""
        if USAGE_OPTION in self._refusals:
            body = without_usage_request(body)
        while True:
            request = client.build_request("POST", url, content=encode_body(body), headers=headers)
            response = await deadlines.read(client.send(request, stream=True))
            if response.status_code < 400:
                return response
            try:
                raw = await deadlines.read(_read_capped(response))
            finally:
                await response.aclose()
            error = raw.decode("utf-8", "replace")
            if refuses_usage_request(response.status_code, error, body):
                self._refusals.add(USAGE_OPTION)
                body = without_usage_request(body)
                continue
            raise ModelHTTPError(response.status_code, error, provider=self.model)

    def _timeout_error(self, limit: Limit) -> ModelTimeoutError:
        if limit == "total":
            detail = f"the reply took longer than the total limit of {self.total_timeout_s:g}s"
            seconds = self.total_timeout_s
        else:
            detail = (
                f"no data for {self.idle_timeout_s:g}s, the idle limit "
                "(keep-alive comments do not count)"
            )
            seconds = self.idle_timeout_s
        return ModelTimeoutError(
            f"model server at {self.base_url} did not answer in time: {detail}",
            provider=self.model,
            limit=limit,
            seconds=seconds,
        )


async def _read_capped(response: httpx.Response) -> bytes:
    """The start of an error body; a misbehaving server must not make us buffer megabytes."""
    collected = bytearray()
    async for chunk in response.aiter_bytes():
        collected += chunk
        if len(collected) >= MAX_ERROR_BODY_BYTES:
            break
    return bytes(collected[:MAX_ERROR_BODY_BYTES])
