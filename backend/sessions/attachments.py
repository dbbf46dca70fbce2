"""Inline media: lifted out of a message on write, put back on read.

The rule is by **type, not size**. Walking the message (objects and arrays, at most
``MAX_WALK_DEPTH`` levels deep, tool outputs included), any object that

* carries a ``url`` that is a base64 ``data:`` URL whose media type (the object's ``mediaType``,
  else the URL header, else ``application/octet-stream``) is not ``text/*``, or
* carries bare base64 in ``data`` and declares a non-``text/*`` ``mediaType``

has that payload replaced by a pointer ``attachment:sha256:<64 hex>`` and the bytes handed to the
store, which keeps one copy per hash. Everything else stays inline: ``text/*``, non-base64 data
URLs, and base64 that does not round-trip exactly (padding, line breaks, url-safe alphabet),
because a read must return the very string that was written.

The pointer replaces only the payload. When the URL header is exactly ``data:<mediaType>;base64``
the whole ``url`` becomes the pointer (the reference format); otherwise (no ``mediaType`` key,
extra header parameters) the header is kept, ``<header>,attachment:sha256:<hex>``, so the read
restores it byte for byte and never adds a key the writer did not send.

Pure code: no I/O. The store supplies a loader for ``resolve_attachments``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from backend.sessions.chunking import MAX_INLINE_ROW_BYTES

POINTER_PREFIX = "attachment:sha256:"
MAX_WALK_DEPTH = 8
DEFAULT_MEDIA_TYPE = "application/octet-stream"

_POINTER_RE = re.compile(r"attachment:sha256:([0-9a-f]{64})")
_EXACT_POINTER_RE = re.compile(r"attachment:sha256:([0-9a-f]{64})\Z")


@dataclass(frozen=True, slots=True)
class Payload:
    """Bytes lifted out of a message, addressed by their sha256."""

    hash: str
    data: bytes
    media_type: str


Loader = Callable[[set[str]], Mapping[str, tuple[bytes, str]]]
"""Given hashes, return ``{hash: (bytes, media_type)}`` for those the store holds."""


def payload_slices(data: bytes) -> list[bytes]:
    """A payload as the rows that store it: slices of at most ``MAX_INLINE_ROW_BYTES``."""
    return [
        data[start : start + MAX_INLINE_ROW_BYTES]
        for start in range(0, len(data), MAX_INLINE_ROW_BYTES)
    ]


class SliceRow(Protocol):
    """A stored slice of a payload, as a ``sqlite3.Row`` reads it."""

    def __getitem__(self, key: str, /) -> Any: ...


def gather_payloads(rows: Iterable[SliceRow]) -> dict[str, tuple[bytes, str]]:
    """``{hash: (bytes, media_type)}`` from slice rows (``hash``, ``media_type``, ``data``)
    ordered by hash and slice index: the inverse of :func:`payload_slices`."""
    pieces: dict[str, list[bytes]] = {}
    media_types: dict[str, str] = {}
    for row in rows:
        pieces.setdefault(row["hash"], []).append(row["data"])
        media_types[row["hash"]] = row["media_type"]
    return {digest: (b"".join(parts), media_types[digest]) for digest, parts in pieces.items()}


def pointer(digest: str) -> str:
    return POINTER_PREFIX + digest


def might_hold_media(json_text: str) -> bool:
    """Cheap pre-check on the serialised message: False means extraction would find nothing."""
    return ";base64," in json_text or ('"data":"' in json_text and '"mediaType"' in json_text)


def find_pointers(json_text: str) -> set[str]:
    """Hashes of every pointer in a stored form: the message's attachment references."""
    if POINTER_PREFIX not in json_text:
        return set()
    return set(_POINTER_RE.findall(json_text))


def extract_attachments(message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Payload]]:
    """The stored form of ``message`` and the payloads lifted out of it (copy-on-write)."""
    payloads: dict[str, Payload] = {}
    stored = _extract(message, 0, payloads)
    return stored, payloads


def _extract(value: Any, depth: int, payloads: dict[str, Payload]) -> Any:
    if isinstance(value, dict):
        result = _extract_record(value, payloads)
        if depth < MAX_WALK_DEPTH:
            for key, child in value.items():
                if isinstance(child, dict | list):
                    new_child = _extract(child, depth + 1, payloads)
                    if new_child is not child:
                        if result is value:
                            result = dict(value)
                        result[key] = new_child
        return result
    if isinstance(value, list) and depth < MAX_WALK_DEPTH:
        new_items: list[Any] | None = None
        for index, item in enumerate(value):
            new_item = (
                _extract(item, depth + 1, payloads) if isinstance(item, dict | list) else item
            )
            if new_item is not item and new_items is None:
                new_items = list(value)
            if new_items is not None:
                new_items[index] = new_item
        return value if new_items is None else new_items
    return value


def _extract_record(record: dict[str, Any], payloads: dict[str, Payload]) -> dict[str, Any]:
    declared = record.get("mediaType")
    declared = declared if isinstance(declared, str) and declared else None
    result = record
    url = record.get("url")
    if isinstance(url, str) and url.startswith("data:"):
        header, comma, encoded = url.partition(",")
        if comma and header.endswith(";base64"):
            header_type = header[5:-7].split(";", 1)[0]
            media_type = declared or header_type or DEFAULT_MEDIA_TYPE
            data = _decode_exact(encoded) if not _is_text(media_type) else None
            if data:
                digest = _store(payloads, data, media_type)
                canonical = declared is not None and header == f"data:{declared};base64"
                result = dict(result)
                result["url"] = pointer(digest) if canonical else f"{header},{pointer(digest)}"
    encoded_data = record.get("data")
    if isinstance(encoded_data, str) and declared is not None and not _is_text(declared):
        data = _decode_exact(encoded_data)
        if data:
            digest = _store(payloads, data, declared)
            if result is record:
                result = dict(result)
            result["data"] = pointer(digest)
    return result


def _is_text(media_type: str) -> bool:
    return media_type.lower().startswith("text/")


def _decode_exact(encoded: str) -> bytes | None:
    """The bytes of canonical base64 ``encoded``, or None if it would not re-encode identically."""
    if not encoded or len(encoded) % 4:
        return None
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(data).decode("ascii") != encoded:
        return None
    return data


def _store(payloads: dict[str, Payload], data: bytes, media_type: str) -> str:
    digest = hashlib.sha256(data).hexdigest()
    payloads.setdefault(digest, Payload(digest, data, media_type))
    return digest


def resolve_attachments(message: dict[str, Any], hashes: set[str], load: Loader) -> dict[str, Any]:
    """Put payloads back in place of pointers; an unknown pointer is left as it is."""
    if not hashes:
        return message
    found = load(hashes)
    if not found:
        return message
    return _resolve(message, found)


def _resolve(value: Any, found: Mapping[str, tuple[bytes, str]]) -> Any:
    if isinstance(value, dict):
        result = value
        for key, child in value.items():
            if isinstance(child, dict | list):
                new_child = _resolve(child, found)
            elif isinstance(child, str) and key in ("url", "data"):
                new_child = _resolve_string(value, key, child, found)
            else:
                continue
            if new_child is not child:
                if result is value:
                    result = dict(value)
                result[key] = new_child
        return result
    if isinstance(value, list):
        new_items: list[Any] | None = None
        for index, item in enumerate(value):
            new_item = _resolve(item, found) if isinstance(item, dict | list) else item
            if new_item is not item and new_items is None:
                new_items = list(value)
            if new_items is not None:
                new_items[index] = new_item
        return value if new_items is None else new_items
    return value


def _resolve_string(
    record: dict[str, Any], key: str, text: str, found: Mapping[str, tuple[bytes, str]]
) -> str:
    if POINTER_PREFIX not in text:
        return text
    if text.startswith(POINTER_PREFIX):
        match = _EXACT_POINTER_RE.fullmatch(text)
        if match is None or match.group(1) not in found:
            return text
        data, stored_type = found[match.group(1)]
        encoded = base64.b64encode(data).decode("ascii")
        if key == "data":
            return encoded
        declared = record.get("mediaType")
        media_type = declared if isinstance(declared, str) and declared else stored_type
        return f"data:{media_type};base64,{encoded}"
    if key == "url" and text.startswith("data:"):
        header, comma, rest = text.partition(",")
        match = _EXACT_POINTER_RE.fullmatch(rest)
        if comma and match is not None and match.group(1) in found:
            data, _ = found[match.group(1)]
            return f"{header},{base64.b64encode(data).decode('ascii')}"
    return text
