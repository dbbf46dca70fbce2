"""How a growing message is stored without rewriting what it already stored (pure code).

A streamed reply is written again at every checkpoint, each time a little longer, and most of
its stored JSON is unchanged: the text grows in the middle (``"text": "...`` grows, the closing
``"}], "metadata": {...}}`` after it moves along). :func:`grown_slices` keeps the stored slices
that still begin the new content and cuts the rest in two: what is new, and the end it shares
with what was stored after the kept slices (the closing part). Stored as separate slices, the
next checkpoint keeps the new text's slice and rewrites only the short end: each checkpoint
writes about what it added, not the reply.

The slices stay slices (``session_message_chunks``): every reader joins them as it joins a
big message's, each within :data:`~backend.sessions.chunking.MAX_INLINE_ROW_BYTES`. Past
:data:`MAX_GROWN_SLICES` the message is written whole again (one rewrite every so many
checkpoints), so a long stream cannot fragment a message without bound.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from backend.sessions.chunking import split_content

GROWTH_MIN_CHARS = 4_096
"""Below this a message is rewritten whole: its rows cost about as much as any slice."""
MAX_GROWN_SLICES = 128


def grown_slices(stored: Sequence[str], content: str) -> tuple[int, list[str]] | None:
    """``(first, pieces)``: ``stored[:first]`` still begin ``content`` and stay as they are;
    ``pieces`` are the slices from index ``first`` on. None when the message is better written
    whole: it did not grow, what it keeps is short, or it would need too many slices.

    The first piece is the part of ``stored[first]`` that ``content`` still holds (rewritten
    once, shorter, when a message first grows), then what is new, then the end ``content``
    shares with what was stored after that point.
    """
    if len(content) < sum(len(piece) for piece in stored):
        return None
    end = 0
    first = 0
    for piece in stored:
        if not content.startswith(piece, end):
            break
        end += len(piece)
        first += 1
    rest = content[end:]
    old_rest = "".join(stored[first:])
    same = _common_prefix(rest, old_rest)
    if end + same < GROWTH_MIN_CHARS:
        return None
    shared = _common_suffix(rest[same:], old_rest[same:])
    cut = len(rest) - shared
    parts = (rest[:same], rest[same:cut], rest[cut:])
    pieces = [piece for part in parts if part for piece in split_content(part)]
    if first + len(pieces) > MAX_GROWN_SLICES:
        return None
    return first, pieces


def _common_prefix(first: str, second: str) -> int:
    """Characters ``first`` and ``second`` begin with alike."""
    return len(os.path.commonprefix([first, second]))  # noqa: RUF071 (strings, not paths)


def _common_suffix(first: str, second: str) -> int:
    """Characters ``first`` and ``second`` end with alike."""
    return _common_prefix(first[::-1], second[::-1])
