"""A store's statement (``?`` placeholders, SQLite-style) as psycopg runs it (``%s``).

Stores keep one SQL spelling for both engines where the SQL itself is the same, so the
placeholder style is translated here, once per statement string (cached: stores pass the same
module constants again and again, so a lookup is all a statement pays after its first run).
``?`` inside a quoted literal or identifier stays, and a literal ``%`` is doubled (psycopg
reads ``%`` as the start of a placeholder). Named parameters (``:name``) are not used by any
store and are refused, so a mistranslation cannot pass silently.

:func:`is_read` tells a read from a write, also once per statement string: a read outside a
transaction borrows a connection for itself, anything else runs as a write transaction (it
takes the scope's write lock and moves its version for every other node).
"""

from __future__ import annotations

import re
from typing import Any

from backend.errors import InvalidInputError

MAX_CACHED = 4096
"""Distinct statement strings remembered; stores have a few hundred constants in all. Past
it the cache starts again (a store building statements by f-string costs a re-translation,
never wrong SQL)."""

_cache: dict[str, str] = {}
_reads: dict[str, bool] = {}
_READ_VERBS = ("SELECT", "VALUES", "SHOW", "EXPLAIN", "TABLE")
_WRITE_VERBS = frozenset({"INSERT", "UPDATE", "DELETE", "MERGE"})
_WORDS = re.compile(r"[A-Za-z_]\w*")
_NOT_CODE = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
_NAMED = re.compile(r"(?<![:\w]):[A-Za-z_]\w*")


def to_psycopg(sql: str) -> str:
    """``sql`` with each ``?`` outside quotes as ``%s`` and each ``%`` as ``%%``."""
    translated = _cache.get(sql)
    if translated is None:
        translated = _translate(sql)
        if len(_cache) >= MAX_CACHED:
            _cache.clear()
        _cache[sql] = translated
    return translated


def _translate(sql: str) -> str:
    out: list[str] = []
    quote = ""
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
            out.append("%%" if char == "%" else char)
            continue
        if char in "'\"":
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif char == "%":
            out.append("%%")
        else:
            out.append(char)
    if quote:
        raise ValueError(f"unterminated quote in statement: {' '.join(sql.split())[:120]}")
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", sql)
    if _NAMED.search(unquoted.replace("::", "")):
        raise ValueError(f"named parameters are not supported: {' '.join(sql.split())[:120]}")
    return "".join(out)


def is_read(sql: str) -> bool:
    """True when ``sql`` reads only: it begins with a read verb, or it is a ``WITH`` query none
    of whose parts modifies data (a data-modifying CTE says ``INSERT``, ``UPDATE``, ``DELETE`` or
    ``MERGE`` outside quotes and comments; a column merely named so reads as a write, which is
    the safe side: it only moves the version)."""
    known = _reads.get(sql)
    if known is None:
        known = _classify(sql)
        if len(_reads) >= MAX_CACHED:
            _reads.clear()
        _reads[sql] = known
    return known


def _classify(sql: str) -> bool:
    code = _NOT_CODE.sub(" ", sql)
    words = _WORDS.findall(code)
    if not words:
        return False
    verb = words[0].upper()
    if verb == "WITH":
        return not any(word.upper() in _WRITE_VERBS for word in words)
    return verb in _READ_VERBS


def bound_params(params: Any) -> Any:
    """psycopg formats only when given parameters; always give some (``%%`` must unescape)."""
    if isinstance(params, dict):
        raise InvalidInputError("named parameters are not supported by the PostgreSQL scope")
    return params if isinstance(params, list | tuple) else tuple(params)


def surrogate_error(sql: str) -> InvalidInputError:
    return InvalidInputError(
        f"text holding a lone UTF-16 surrogate cannot be stored (in: {first_line(sql)})"
    )


def first_line(sql: str) -> str:
    return " ".join(sql.split())[:120]
