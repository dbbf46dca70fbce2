"""Row chunking: split a stored JSON string into row-sized slices on UTF-8 byte boundaries.

Owns ``MAX_INLINE_ROW_BYTES`` and the one rule of the continuation format:

* slice 0 lives in the message row, slices 1..n in ``session_message_chunks`` with ``idx`` 1..n;
* every slice is at most ``budget`` UTF-8 bytes, except a single character wider than the budget
  (only possible with a budget below 4), which gets a slice of its own — never an empty slice;
* a slice never ends inside a code point, so each slice is valid UTF-8 on its own and
  ``"".join(split_content(s)) == s`` for every string.

Pure code: no I/O.
"""

from __future__ import annotations

MAX_INLINE_ROW_BYTES = 1536 * 1024
"""Largest UTF-8 size of one stored slice (1,572,864 bytes, "1.5 MiB")."""

_CONTINUATION_MASK = 0xC0
_CONTINUATION_BITS = 0x80


def utf8_length(text: str) -> int:
    """Size of ``text`` in UTF-8 bytes, without encoding when the answer is obvious."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def split_content(
    text: str, budget: int = MAX_INLINE_ROW_BYTES, *, encoded: bytes | None = None
) -> list[str]:
    """Cut ``text`` into slices of at most ``budget`` UTF-8 bytes; ``""`` gives ``[""]``.

    ``encoded`` may pass ``text``'s UTF-8 bytes when the caller already has them.
    """
    if budget < 1:
        raise ValueError("budget must be at least one byte")
    # A code point is at most 4 UTF-8 bytes: short strings fit without encoding at all.
    if len(text) * 4 <= budget:
        return [text]
    data = text.encode("utf-8", "surrogatepass") if encoded is None else encoded
    size = len(data)
    if size <= budget:
        return [text]
    slices: list[str] = []
    start = 0
    while start < size:
        end = start + budget
        if end >= size:
            slices.append(data[start:].decode("utf-8", "surrogatepass"))
            break
        cut = end
        # Back off to the first byte of the code point that straddles the budget.
        while cut > start and data[cut] & _CONTINUATION_MASK == _CONTINUATION_BITS:
            cut -= 1
        if cut == start:  # one character wider than the whole budget: give it its own slice
            cut = start + 1
            while cut < size and data[cut] & _CONTINUATION_MASK == _CONTINUATION_BITS:
                cut += 1
        slices.append(data[start:cut].decode("utf-8", "surrogatepass"))
        start = cut
    return slices
