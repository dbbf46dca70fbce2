"""The sentences a failed run shows the user (``run.failed`` ``error``, the reply's metadata).

Errors are defined once in :mod:`backend.errors`; turning one into words for the UI happens
here only, so every way a run can end badly reads the same wherever it is shown.
"""

from __future__ import annotations

import json

from backend.errors import (
    ChatsError,
    LeaseLostError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
)
from backend.storage.engines import is_storage_unavailable

INTERRUPTED_ERROR = "The app stopped while this reply was being written."
LEASE_LOST_ERROR = "This reply was stopped: another server took over the chat meanwhile."
# The database cannot be reached: the person is told that, never where the database is.
STORAGE_UNAVAILABLE_ERROR = (
    "Storage unavailable: this reply could not be saved. Retry once storage is back."
)
STORAGE_UNAVAILABLE_REFUSAL = "Storage unavailable: nothing was sent. Try again in a moment."
# How much of a model server's error body a sentence quotes.
MAX_DETAIL_CHARS = 300


def describe_failure(exc: BaseException) -> str:
    """A sentence for the UI."""
    if isinstance(exc, ModelHTTPError):
        return f"The model server answered HTTP {exc.status_code}: {_error_detail(exc.body)}"
    if isinstance(exc, ModelTimeoutError):
        return f"The model did not answer in time. ({exc})"
    if isinstance(exc, ModelError):
        return f"The model failed: {exc}"
    if isinstance(exc, LeaseLostError):
        return LEASE_LOST_ERROR
    if is_storage_unavailable(exc):
        return STORAGE_UNAVAILABLE_ERROR
    if isinstance(exc, ChatsError):
        return str(exc)
    return f"Unexpected error: {type(exc).__name__}: {exc}"


def describe_refusal(exc: BaseException) -> str:
    """A sentence for a request the runtime refused before doing anything (a send)."""
    return STORAGE_UNAVAILABLE_REFUSAL if is_storage_unavailable(exc) else str(exc)


def _error_detail(body: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's start."""
    try:
        parsed = json.loads(body)
    except (ValueError, TypeError):
        return body.strip()[:MAX_DETAIL_CHARS] or "no details"
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:MAX_DETAIL_CHARS]
    if isinstance(error, str):
        return error[:MAX_DETAIL_CHARS]
    return body.strip()[:MAX_DETAIL_CHARS]
