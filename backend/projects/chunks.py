"""A document's text cut into chunks a turn can quote: whole paragraphs where they fit.

Pure code. A chunk holds at most :data:`CHUNK_CHARS` characters; it ends at a paragraph break
when one falls in its second half, else at a line break, else at a space, else where the
limit falls (a run of text with no space at all). Chunks do not overlap, and joined back they
hold every non-blank character of the text in order: nothing of the document is dropped.
"""

from __future__ import annotations

CHUNK_CHARS = 1_200
"""About 300 tokens: a few chunks fit a turn's budget beside the conversation."""

_BREAKS = ("\n\n", "\n", " ")


def chunk_text(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` in chunks of at most ``size`` characters, blank ones left out."""
    if size < 2:
        raise ValueError("size must be at least 2")
    chunks: list[str] = []
    rest = text.strip()
    while rest:
        if len(rest) <= size:
            chunks.append(rest)
            break
        cut = _cut(rest, size)
        piece = rest[:cut].strip()
        if piece:
            chunks.append(piece)
        rest = rest[cut:].lstrip()
    return chunks


def _cut(text: str, size: int) -> int:
    """Where the chunk starting ``text`` ends: the latest break in its second half."""
    window = text[:size]
    for mark in _BREAKS:
        at = window.rfind(mark)
        if at >= size // 2:
            return at + len(mark)
    return size
