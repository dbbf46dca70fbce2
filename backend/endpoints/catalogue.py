"""Which models each endpoint offers now: ``GET {base_url}/models``, cached briefly, fail-soft.

Invariants:

* **Fail-soft per endpoint.** An endpoint that is down, slow (``LIST_TIMEOUT_S``), refuses the
  key or answers something that is not a model list is *unavailable* with a short reason; the
  others are listed as usual. Reading the catalogue never raises for an endpoint's sake.
* **Cached.** A listing is reused for ``ttl_s`` (60 s), a failure for ``failure_ttl_s`` (10 s:
  an endpoint coming back up shows soon, a dead one is not asked on every page view). The
  cache key includes the URL and key, so an edited endpoint is asked again at once.
* **Allow-list.** An endpoint with an allow-list offers the listed models that its server
  also lists (and, while it is down, the allow-list itself, marked unavailable).
* Synchronous (``httpx.Client``): the UI calls it from a worker thread, never the event loop.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from backend.endpoints.endpoint import MAX_MODEL_NAME_CHARS, Endpoint

CATALOGUE_TTL_S = 60.0
FAILURE_TTL_S = 10.0
LIST_TIMEOUT_S = 3.0
MAX_LISTED_MODELS = 1_000
MAX_LIST_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class EndpointListing:
    """What one endpoint offered at ``checked_at`` (monotonic seconds)."""

    endpoint: str
    available: bool
    models: tuple[str, ...]
    error: str = ""  # why it is unavailable, a short sentence for the admin page
    checked_at: float = 0.0


class ModelCatalogue:
    """Per-endpoint listings with a short cache (thread-safe)."""

    def __init__(
        self,
        *,
        ttl_s: float = CATALOGUE_TTL_S,
        failure_ttl_s: float = FAILURE_TTL_S,
        timeout_s: float = LIST_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl_s = ttl_s
        self._failure_ttl_s = failure_ttl_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], EndpointListing] = {}
        self.requests = 0  # GET /models sent so far (tests and the admin page's "checked")

    def listing(self, endpoint: Endpoint, *, refresh: bool = False) -> EndpointListing:
        key = (endpoint.name, endpoint.base_url, endpoint.api_key)
        now = self._clock()
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None and not refresh:
            ttl = self._ttl_s if cached.available else self._failure_ttl_s
            if now - cached.checked_at < ttl:
                return cached
        listing = self._fetch(endpoint, now)
        with self._lock:
            for old in [k for k in self._cache if k[0] == endpoint.name and k != key]:
                del self._cache[old]  # an edited endpoint's old listing
            self._cache[key] = listing
        return listing

    def forget(self, name: str) -> None:
        with self._lock:
            for key in [k for k in self._cache if k[0] == name]:
                del self._cache[key]

    def _fetch(self, endpoint: Endpoint, now: float) -> EndpointListing:
        with self._lock:
            self.requests += 1
        headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
        if endpoint.api_key:
            headers["Authorization"] = f"Bearer {endpoint.api_key}"
        try:
            with httpx.Client(timeout=self._timeout_s) as client:
                response = client.get(f"{endpoint.base_url}/models", headers=headers)
            if response.status_code >= 400:
                return self._down(endpoint, f"it answered HTTP {response.status_code}", now)
            if len(response.content) > MAX_LIST_BYTES:
                return self._down(endpoint, "its model list is too large", now)
            listed = _model_ids(response.json())
        except httpx.TimeoutException:
            return self._down(endpoint, f"no answer within {self._timeout_s:g} s", now)
        except httpx.HTTPError as exc:
            return self._down(endpoint, f"cannot reach it ({type(exc).__name__})", now)
        except ValueError:
            return self._down(endpoint, "its /models answer is not a model list", now)
        if endpoint.models:
            listed = tuple(m for m in endpoint.models if m in listed)
        return EndpointListing(endpoint.name, True, listed, checked_at=now)

    @staticmethod
    def _down(endpoint: Endpoint, reason: str, now: float) -> EndpointListing:
        return EndpointListing(endpoint.name, False, endpoint.models, reason, now)


def _model_ids(document: Any) -> tuple[str, ...]:
    """The ids of an OpenAI ``{"data": [{"id": ...}]}`` list (Ollama and vLLM send this too)."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise ValueError("no data list")
    ids: list[str] = []
    for item in data[:MAX_LISTED_MODELS]:
        model = item.get("id") if isinstance(item, dict) else None
        if isinstance(model, str) and model and len(model) <= MAX_MODEL_NAME_CHARS:
            ids.append(model)
    return tuple(dict.fromkeys(ids))
