"""What a message must look like to be stored, and what the store removes from it.

Owns the write pipeline's pure steps, in order:

1. ``validate_message`` — a dict with a non-empty string ``id``, a string ``role`` and a list of
   ``parts`` (the ``UIMessage`` shape every read relies on);
2. ``sanitize_message`` — removes provider-ephemeral fields (OpenAI ``itemId`` and
   ``reasoningEncryptedContent`` under ``providerMetadata.openai`` and
   ``callProviderMetadata.openai``) and reasoning parts left with no text and no provider metadata;
3. ``strip_reserved_metadata`` — for ``source="client"`` writes, drops the reserved metadata keys;
4. ``dump_json`` — the one serialisation of a stored message. Non-JSON input raises ``TypeError``
   (also for NaN/Infinity and circular references, which ``json`` reports as ``ValueError``).

Every step is copy-on-write: an input that needs no change is returned as the same object, and
the caller's dict is never mutated. Pure code: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from json.encoder import (  # type: ignore[attr-defined]
    c_make_encoder,
    encode_basestring,
    encode_basestring_ascii,
)
from typing import Any, cast

from backend.errors import InvalidInputError

Message = dict[str, Any]

_OPENAI_EPHEMERAL_KEYS = ("itemId", "reasoningEncryptedContent")
_PROVIDER_METADATA_KEYS = ("providerMetadata", "callProviderMetadata")


# Compact and UTF-8: the stored form is what the row budget, the digest and byte budgets measure.
# The C encoder is built once (``json.dumps`` builds one per call, a third of a small append's
# serialisation time). No ``markers`` dict: it would be shared across threads, so a circular
# structure surfaces as RecursionError instead, which ``dump_json`` reports as TypeError.
def _unserialisable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_encoder(ensure_ascii: bool) -> Callable[[object], str]:
    if c_make_encoder is None:  # pragma: no cover - CPython always ships the C accelerator
        encoder = json.JSONEncoder(
            ensure_ascii=ensure_ascii, separators=(",", ":"), allow_nan=False
        )
        return encoder.encode
    make = cast(Callable[..., Callable[[object, int], Any]], c_make_encoder)
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    chunks = make(None, _unserialisable, quote, None, ":", ",", False, False, False)
    return lambda value: "".join(chunks(value, 0))


_encode = _make_encoder(ensure_ascii=False)
# Lone surrogates cannot be encoded as UTF-8; escaping them keeps the value exact on read.
_encode_ascii = _make_encoder(ensure_ascii=True)


def validate_message(message: object) -> str:
    """Check the ``UIMessage`` shape and return the id; raise on anything a read would skip."""
    if not isinstance(message, dict):
        raise TypeError(f"a message is a dict, not {type(message).__name__}")
    message_id = message.get("id")
    if not isinstance(message_id, str) or not message_id:
        raise InvalidInputError("a message needs a non-empty string 'id'")
    if not message_id.isascii():
        check_storable_text(message_id, "message id")
    if not isinstance(message.get("role"), str):
        raise InvalidInputError(f"message {message_id!r} needs a string 'role'")
    if not isinstance(message.get("parts"), list):
        raise InvalidInputError(f"message {message_id!r} needs a list of 'parts'")
    return message_id


def check_storable_text(text: str, what: str) -> None:
    """A key column holds UTF-8: refuse a string with a lone surrogate, which has none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} {text!r} is not valid Unicode text") from exc


def dump_json(value: object) -> tuple[str, bytes]:
    """Serialise ``value`` to its stored JSON text and that text's UTF-8 bytes."""
    try:
        text = _encode(value)
    except (ValueError, RecursionError) as exc:  # NaN/Infinity, circular or absurdly deep
        raise TypeError(f"message is not JSON-serialisable: {exc}") from exc
    try:
        return text, text.encode("utf-8")
    except UnicodeEncodeError:
        text = _encode_ascii(value)
        return text, text.encode("utf-8")


def sanitize_message(message: Message) -> Message:
    """Drop provider-ephemeral fields and empty reasoning parts (copy-on-write)."""
    parts = message.get("parts")
    if not isinstance(parts, list) or not any(map(_may_need_cleaning, parts)):
        return message  # the common case, decided without building anything
    cleaned: list[Any] | None = None
    for index, part in enumerate(parts):
        new_part = _sanitize_part(part) if isinstance(part, dict) else part
        if new_part is part and cleaned is None:
            continue
        if cleaned is None:
            cleaned = list(parts[:index])
        if new_part is not None:
            cleaned.append(new_part)
    if cleaned is None:
        return message
    return {**message, "parts": cleaned}


def _may_need_cleaning(part: object) -> bool:
    return isinstance(part, dict) and (
        part.get("type") == "reasoning"
        or "providerMetadata" in part
        or "callProviderMetadata" in part
    )


def _sanitize_part(part: dict[str, Any]) -> dict[str, Any] | None:
    """The part without ephemeral provider fields; ``None`` when the part should be dropped."""
    result = part
    for key in _PROVIDER_METADATA_KEYS:
        metadata = result.get(key)
        if not isinstance(metadata, dict):
            continue
        openai = metadata.get("openai")
        if not isinstance(openai, dict) or not any(k in openai for k in _OPENAI_EPHEMERAL_KEYS):
            continue
        kept_openai = {k: v for k, v in openai.items() if k not in _OPENAI_EPHEMERAL_KEYS}
        new_metadata = {k: v for k, v in metadata.items() if k != "openai"}
        if kept_openai:
            new_metadata["openai"] = kept_openai
        result = dict(result)  # keeps key order: the stored JSON differs only where it must
        if new_metadata:
            result[key] = new_metadata
        else:
            del result[key]
    if result.get("type") == "reasoning" and _is_blank(result.get("text")):
        provider_metadata = result.get("providerMetadata")
        if not (isinstance(provider_metadata, dict) and provider_metadata):
            return None
    return result


def _is_blank(text: object) -> bool:
    return not isinstance(text, str) or not text.strip()


def strip_reserved_metadata(message: Message, reserved_keys: Collection[str]) -> Message:
    """Remove ``reserved_keys`` from ``message["metadata"]``; drop ``metadata`` if it empties."""
    metadata = message.get("metadata")
    if not reserved_keys or not isinstance(metadata, dict):
        return message
    if not any(key in metadata for key in reserved_keys):
        return message
    kept = {k: v for k, v in metadata.items() if k not in reserved_keys}
    result = dict(message)
    if kept:
        result["metadata"] = kept
    else:
        del result["metadata"]
    return result
