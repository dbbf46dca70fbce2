"""A streaming reply's text in pieces, so a flush re-sends the newest piece, not the reply.

Reflex sends every var that changes with its whole value. Held in one var, the text of a
streaming reply went whole to every watching tab at every flush (25 a second): a reply of
n characters cost each tab O(n²) bytes, ~1 KB per word for a 1,000-word reply and ~3 KB per
word for 3,000 words (``bench/stream_pieces_bench.py``).

So the text is held in ``PIECE_LEVELS`` pieces, oldest text in the highest level; the page
shows their concatenation, highest level first. New text joins level 0, which holds at most
``BASE_CHARS``. When it would overflow, it is merged, with every level below the first one
that has room for all of them, into that level (level k holds at most ``BASE_CHARS * 2**k``;
the last level has no limit), and the levels it came from are emptied. A flush therefore
re-sends level 0 (at most ``BASE_CHARS`` plus the flushed text), and now and then one merged
level and the emptied ones below it. Text only ever moves up, so each character is re-sent
at most once per level: O(n log n) bytes for a reply of n characters.

Pure: the conversation state stores the pieces (``chatsapp.states.conversation``), the chat
view joins them (``chatsapp.components.message``).
"""

from __future__ import annotations

from collections.abc import Sequence

PIECE_LEVELS = 12  # the top level with a limit holds 512 * 2**10 characters; the last, any
BASE_CHARS = 512
PIECE_VAR = "streaming_piece_"  # the state's vars: streaming_piece_0 (newest text) ... _11


def capacity(level: int) -> int | None:
    """The most characters ``level`` holds; ``None`` for the last level (no limit)."""
    if level >= PIECE_LEVELS - 1:
        return None
    return BASE_CHARS << level


def append(pieces: Sequence[str], text: str) -> dict[int, str]:
    """The levels that change when ``text`` is appended to ``pieces``: ``{level: new value}``.

    ``pieces[k]`` is level k; the text they hold is ``"".join(reversed(pieces))``, and stays
    that text followed by ``text`` once the changes are applied.
    """
    if len(pieces) != PIECE_LEVELS:
        raise ValueError(f"expected {PIECE_LEVELS} pieces, got {len(pieces)}")
    if not text:
        return {}
    newest = pieces[0] + text
    if len(newest) <= BASE_CHARS:
        return {0: newest}
    carried = len(newest)
    for level in range(1, PIECE_LEVELS):
        carried += len(pieces[level])
        limit = capacity(level)
        if limit is None or carried <= limit:
            merged = "".join(reversed(pieces[1 : level + 1])) + newest
            changes = {below: "" for below in range(level) if pieces[below]}
            changes[level] = merged
            return changes
    raise AssertionError("the last level has no limit")  # pragma: no cover


def joined(pieces: Sequence[str]) -> str:
    """The text ``pieces`` hold, oldest first (what the page shows)."""
    return "".join(reversed(pieces))
