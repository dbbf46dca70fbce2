"""Validation of session-state documents, as pure functions (no I/O).

Session state is trusted working memory, so what may enter it is checked deterministically
before any write: it must be JSON, nest at most ``MAX_DEPTH`` levels, fit the size ceiling,
match the agent's schema, and hold no secret-looking keys (seed 004: "No secrets may be stored
in it"). Every limit but the schema holds for every write, with or without a schema; the depth
is checked first, without recursion, so no later step (encoding, the schema and secret walks)
can hit the interpreter's recursion limit on a hostile document.

The schema language is a small JSON-Schema subset, enough for working memory and
dependency-free: ``type`` (name or list), ``properties``, ``required``,
``additionalProperties`` (bool or schema), ``items``, ``enum``, ``maxLength``, ``maxItems``,
``minimum``/``maximum``. Unknown keywords are ignored, as JSON Schema does.
"""

from __future__ import annotations

import json
import re
from typing import Any

from backend.errors import InvalidSessionStateError, SessionStateTooLargeError

DEFAULT_MAX_STATE_BYTES = 16 * 1024
MAX_DEPTH = 16

_SECRET_KEY = re.compile(
    r"(?:^|[_\-.])(?:password|passwd|secret|api[_\-]?key|access[_\-]?token|private[_\-]?key|"
    r"credential|auth[_\-]?token)s?(?:$|[_\-.])",
    re.IGNORECASE,
)
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def encode_state(data: Any) -> str:
    """Canonical JSON of a state document (sorted keys, compact), or ``TypeError``.

    UTF-8 text, unless a string holds a lone UTF-16 surrogate (which UTF-8 cannot carry):
    then non-ASCII is escaped, so the document is still stored and reads back exactly.
    """
    encoded = _encode(data, ascii_only=False)
    if not encoded.isascii():
        try:
            encoded.encode("utf-8")
        except UnicodeEncodeError:
            return _encode(data, ascii_only=True)
    return encoded


def _encode(data: Any, *, ascii_only: bool) -> str:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii_only, allow_nan=False
    )


def check_state(
    data: Any, schema: dict[str, Any] | None, *, max_bytes: int = DEFAULT_MAX_STATE_BYTES
) -> str:
    """Validate ``data`` and return its canonical encoding; raise on the first kind of problem.

    Order matters for the caller's sentence: not-an-object, too deep and not-JSON are schema
    errors, then size (never truncated), then schema and secret checks.
    """
    if not isinstance(data, dict):
        raise InvalidSessionStateError(["session state must be a JSON object"])
    too_deep = path_deeper_than(data, MAX_DEPTH)
    if too_deep is not None:
        raise InvalidSessionStateError([f"{too_deep}: nested deeper than {MAX_DEPTH} levels"])
    try:
        encoded = encode_state(data)
    except (TypeError, ValueError) as exc:
        raise InvalidSessionStateError([f"session state is not JSON-serialisable: {exc}"]) from exc
    size = len(encoded.encode())
    if size > max_bytes:
        raise SessionStateTooLargeError(size, max_bytes)
    errors: list[str] = []
    _secret_keys(data, "$", errors)
    if schema is not None:
        _validate(data, schema, "$", errors)
    if errors:
        raise InvalidSessionStateError(errors)
    return encoded


def apply_changes(
    current: dict[str, Any], set_values: dict[str, Any] | None, remove: list[str] | None
) -> dict[str, Any]:
    """The document after a proposed top-level ``set``/``remove`` (pure; validate it after)."""
    updated = dict(current)
    for key in remove or []:
        updated.pop(key, None)
    updated.update(set_values or {})
    return updated


def path_deeper_than(document: Any, max_depth: int) -> str | None:
    """The path of a value nested deeper than ``max_depth`` in a JSON value, else ``None``.

    Iterative on purpose: a recursive walk would itself fail on the documents it must refuse.
    """
    stack: list[tuple[Any, str, int]] = [(document, "$", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > max_depth:
            return path
        if isinstance(value, dict):
            stack.extend((child, f"{path}.{key}", depth + 1) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(value))
    return None


def _secret_keys(value: Any, path: str, errors: list[str]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            if _SECRET_KEY.search(str(key)):
                errors.append(f"{path}.{key}: secrets may not be stored in session state")
            _secret_keys(child, f"{path}.{key}", errors)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _secret_keys(child, f"{path}[{index}]", errors)


def _type_ok(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def _validate(value: Any, schema: Any, path: str, errors: list[str]) -> None:
    """Schema errors of ``value`` (its depth is bounded already: see ``check_state``)."""
    if schema is True or not isinstance(schema, dict):
        return
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_type_ok(value, name) for name in names):
            errors.append(f"{path}: expected {' or '.join(names)}, got {type(value).__name__}")
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']!r}")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']} characters")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: above the maximum {schema['maximum']}")
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(value):
                _validate(item, schema["items"], f"{path}[{index}]", errors)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(f"{path}: missing required key {key!r}")
        additional = schema.get("additionalProperties", True)
        for key, child in value.items():
            if key in properties:
                _validate(child, properties[key], f"{path}.{key}", errors)
            elif additional is False:
                errors.append(f"{path}: unexpected key {key!r}")
            else:
                _validate(child, additional, f"{path}.{key}", errors)
