"""Full-text search helpers: what gets indexed, how a user query is quoted, how rows are keyed.

* Indexed text is every ``type: "text"`` part of a message joined with one space; reasoning, tool
  payloads and files are not indexed. It follows the storage text rule (``well_formed_text``: a
  lone UTF-16 surrogate becomes U+FFFD), so every index, digest and rebuild sees one string.
* A user query is one FTS5 **phrase**: wrapped in double quotes with inner quotes doubled, so
  operators (``AND``, ``NEAR``, ``*``, ``:``, parentheses) are matched as text and can never
  change the query's syntax. NUL characters (which end an FTS5 string early) become spaces;
  lone surrogates become U+FFFD, as in indexed text.
* **The query rule** (:func:`query_words`), the one bound on what any search of the project
  asks SQLite to do: a query is its whitespace-separated words holding a letter or digit, read
  from the first :data:`MAX_QUERY_SCAN_CHARS` characters of the input, at most
  :data:`MAX_QUERY_WORDS` of them and :data:`MAX_QUERY_CHARS` characters in all (a single
  longer first word is cut); the rest is ignored. Searches whose words are a set (titles,
  memory) drop repeated words first, case-insensitively. Pasting a page into a search box
  used to make FTS5 evaluate thousands of terms: 0.7 s for one word repeated 1,600 times,
  minutes for 300 KB.
* The FTS table is keyed by an integer rowid derived from ``(session_id, message_id)`` (63 bits
  of a sha256), so maintaining the index is a rowid point write instead of a scan of the
  unindexed id columns. Two distinct keys colliding would make the second insert fail loudly
  (an integrity error, the write rolls back); at 2^-63 per pair that is a risk we accept.

Pure code: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from backend.storage import MAX_INTEGER, well_formed_text

DEFAULT_SEARCH_LIMIT = 20
MAX_QUERY_WORDS = 16
MAX_QUERY_CHARS = 256
"""Characters of the kept words, single spaces between them included."""
MAX_QUERY_SCAN_CHARS = 4 * 1024
"""Only this much of an input is read: the rule costs the same for a pasted megabyte."""
FTS_TOKENIZER = "porter unicode61"
"""The tokenizer of every message FTS table (a chat's own, the directory-wide index, shared
memory): one rule, so a query matches the same words whichever path answers it."""


def indexed_text(message: Mapping[str, Any]) -> str:
    """The text a search can find in ``message``."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        return ""
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
        and part["text"]
    ]
    return well_formed_text(" ".join(texts))


def check_limit(limit: object, default: int) -> int:
    """A search's ``limit``: ``None`` is ``default``; beyond SQLite's integers, no limit.

    Not an integer (``bool`` included) is a ``TypeError``; the caller decides what a limit
    below one means.
    """
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an integer or None, not {type(limit).__name__}")
    return min(limit, MAX_INTEGER)


def query_words(query: str, *, distinct: bool = False) -> list[str]:
    """The words a search uses (the query rule of the module docstring), in input order."""
    words: list[str] = []
    seen: set[str] = set()
    used = -1  # no separator before the first word
    pieces = query[:MAX_QUERY_SCAN_CHARS].replace("\x00", " ").split()
    if len(pieces) > 1 and query[MAX_QUERY_SCAN_CHARS : MAX_QUERY_SCAN_CHARS + 1].strip():
        pieces.pop()  # the scan limit cut this word: a fragment is not what was typed
    for word in pieces:
        if not any(ch.isalnum() for ch in word):
            continue
        if distinct:
            key = word.casefold()
            if key in seen:
                continue
            seen.add(key)
        if used + 1 + len(word) > MAX_QUERY_CHARS:
            if not words:
                words.append(word[:MAX_QUERY_CHARS])
            break
        words.append(word)
        used += 1 + len(word)
        if len(words) == MAX_QUERY_WORDS:
            break
    return words


def phrase_query(query: str) -> str | None:
    """The query's words (see :func:`query_words`) as one FTS5 phrase; None without words."""
    words = query_words(query) if isinstance(query, str) else []
    return quote_phrase(" ".join(words)) if words else None


def quote_phrase(query: str) -> str:
    """``query`` as one literal FTS5 phrase."""
    return '"' + well_formed_text(query).replace("\x00", " ").replace('"', '""') + '"'


def fts_rowid(session_id: str, message_id: str) -> int:
    """The FTS rowid of one message: stable, positive, 63 bits."""
    # Length-prefixed so ("a", "bc") and ("ab", "c") can never produce the same input.
    key = f"{len(session_id)}:{session_id}{message_id}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest()[:8], "big") >> 1
