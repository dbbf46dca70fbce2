"""Full-text search helpers: what gets indexed, how a user query is quoted, how rows are keyed.

* Indexed text is every ``type: "text"`` part of a message joined with one space; reasoning, tool
  payloads and files are not indexed. It follows the storage text rule (``well_formed_text``: a
  lone UTF-16 surrogate becomes U+FFFD), so every index, digest and rebuild sees one string.
* A user query is one FTS5 **phrase**: wrapped in double quotes with inner quotes doubled, so
  operators (``AND``, ``NEAR``, ``*``, ``:``, parentheses) are matched as text and can never
  change the query's syntax. NUL characters (which end an FTS5 string early) become spaces;
  lone surrogates become U+FFFD, as in indexed text.
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

from backend.storage import well_formed_text

DEFAULT_SEARCH_LIMIT = 20
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


def quote_phrase(query: str) -> str:
    """``query`` as one literal FTS5 phrase."""
    return '"' + well_formed_text(query).replace("\x00", " ").replace('"', '""') + '"'


def fts_rowid(session_id: str, message_id: str) -> int:
    """The FTS rowid of one message: stable, positive, 63 bits."""
    # Length-prefixed so ("a", "bc") and ("ab", "c") can never produce the same input.
    key = f"{len(session_id)}:{session_id}{message_id}"
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest()[:8], "big") >> 1
