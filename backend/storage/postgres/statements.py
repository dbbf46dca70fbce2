"""A store's statement (``?`` placeholders, SQLite-style) as psycopg runs it (``%s``).

Stores keep one SQL spelling for both engines where the SQL itself is the same, so the
placeholder style is translated here, once per statement string (cached: stores pass the same
module constants again and again, so a lookup is all a statement pays after its first run).
``?`` inside a quoted literal or identifier stays, and a literal ``%`` is doubled (psycopg
reads ``%`` as the start of a placeholder). Named parameters (``:name``) are not used by any
store and are refused, so a mistranslation cannot pass silently.
"""

from __future__ import annotations

import re

MAX_CACHED = 4096
"""Distinct statement strings remembered; stores have a few hundred constants in all. Past
it the cache starts again (a store building statements by f-string costs a re-translation,
never wrong SQL)."""

_cache: dict[str, str] = {}
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
