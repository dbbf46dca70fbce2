"""A message's stored form: the one place the write pipeline turns a dict into row values.

``encode_message`` runs after sanitising and produces everything a write needs, without I/O:
the stored JSON (attachments replaced by pointers), its row slices, its raw 32-byte sha256
digest (what the no-op update check compares), the token estimate stamped on the row, the
payloads to store and the attachment references the row holds. ``decode_content`` is its
inverse for reads, and the single place that decides a stored row is unreadable (skipped,
never raised).

Pure code: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from backend.sessions.attachments import (
    POINTER_PREFIX,
    Payload,
    extract_attachments,
    find_pointers,
    might_hold_media,
)
from backend.sessions.chunking import MAX_INLINE_ROW_BYTES, split_content
from backend.sessions.sanitize import dump_json
from backend.sessions.tokens import estimate_row_tokens


def json_list(values: Iterable[str]) -> str:
    """A list of ids or hashes as one bound parameter: a JSON array for ``json_each(?)``."""
    return json.dumps(list(values))


_NO_PAYLOADS: dict[str, Payload] = {}  # shared, never mutated: most messages carry no media
_NO_REFERENCES: frozenset[str] = frozenset()


@dataclass(slots=True)  # not frozen: a frozen dataclass pays per field on the hot path
class EncodedMessage:
    """Row values of one message. ``message`` is what the caller sees (payloads inline)."""

    id: str
    role: str
    message: dict[str, Any]
    content: str
    slices: list[str]
    digest: bytes
    token_estimate: int
    payloads: dict[str, Payload]
    references: frozenset[str]
    continuation_count: int


def encode_message(message: dict[str, Any]) -> EncodedMessage:
    """Serialise a validated, sanitised message into its stored form."""
    text, data = dump_json(message)
    payloads: dict[str, Payload] = _NO_PAYLOADS
    if might_hold_media(text):
        stored, payloads = extract_attachments(message)
        if stored is not message:
            text, data = dump_json(stored)
    slices = [text] if len(data) <= MAX_INLINE_ROW_BYTES else split_content(text, encoded=data)
    references = frozenset(find_pointers(text)) if POINTER_PREFIX in text else _NO_REFERENCES
    return EncodedMessage(  # positional: this runs on every write
        message["id"],
        message["role"],
        message,
        text,
        slices,
        hashlib.sha256(data).digest(),
        estimate_row_tokens(message),
        payloads,
        references,
        len(slices) - 1,
    )


def decode_content(content: str) -> dict[str, Any] | None:
    """The message stored as ``content``; None when it is not a readable message."""
    try:
        message = json.loads(content)
    except ValueError:
        return None
    if (
        not isinstance(message, dict)
        or not isinstance(message.get("id"), str)
        or not isinstance(message.get("role"), str)
        or not isinstance(message.get("parts"), list)
    ):
        return None
    return message
