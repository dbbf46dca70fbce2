"""Search snippets computed in bounded time, whatever the size of the message.

FTS5's ``snippet()`` (and ``highlight()``) cost grows with the square of the number of hits in
one document: a 234 KB message holding the searched word 39,000 times took 6 to 11 s per
search. So ``snippet()`` never sees more than :data:`SNIPPET_WINDOW_CHARS` characters:

* A message that fits one window gets exactly the snippet FTS5 gives the whole text (the
  indexed path runs ``snippet()`` on the directory's table for it, :func:`snippets` in memory
  with the same tokenizer: the two agree).
* A longer message is cut into windows of at most :data:`SNIPPET_WINDOW_CHARS` characters,
  overlapping by :data:`SNIPPET_OVERLAP_CHARS` (so a phrase across a cut is whole in the
  next window) and cut at whitespace where there is some (so no word is split into a false
  stem). The windows go into a throwaway in-memory FTS5 table a batch at a time, and the
  snippet is taken from the first window that matches: the cost is tokenizing the text up to
  the first hit plus one bounded ``snippet()``. Ellipses mark text cut off on either side.
* If no window matches (a phrase whose occurrence spans more than the overlap), the snippet
  is the message's first :data:`SNIPPET_TOKENS` words, unhighlighted.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chats.text import SNIPPET_ELLIPSIS, SNIPPET_END, SNIPPET_START, SNIPPET_TOKENS
from backend.sessions.search import FTS_TOKENIZER
from backend.storage import Database

SNIPPET_WINDOW_CHARS = 4 * 1024
"""snippet() over 4 KB full of hits takes about 3 ms; over 8 KB, four times that."""
SNIPPET_OVERLAP_CHARS = 1024
WINDOWS_PER_BATCH = 16

SNIPPET_ARGS = (SNIPPET_START, SNIPPET_END, SNIPPET_ELLIPSIS, SNIPPET_TOKENS)
"""The arguments of ``snippet(table, 0, ...)`` after the column: one look for both paths."""

_CREATE = f"CREATE VIRTUAL TABLE windows USING fts5(content, tokenize = '{FTS_TOKENIZER}')"
_INSERT = "INSERT INTO windows (rowid, content) VALUES (?, ?)"
_SNIPPET_ALL = "SELECT rowid, snippet(windows, 0, ?, ?, ?, ?) FROM windows WHERE windows MATCH ?"
_FIRST_MATCH = (
    "SELECT rowid FROM windows WHERE windows MATCH ? AND rowid BETWEEN ? AND ? "
    "ORDER BY rowid LIMIT 1"
)
_SNIPPET_ONE = (
    "SELECT snippet(windows, 0, ?, ?, ?, ?) FROM windows WHERE windows MATCH ? AND rowid = ?"
)


def fits_one_window(text: str) -> bool:
    return len(text) <= SNIPPET_WINDOW_CHARS


def snippet_windows(text: str) -> list[str]:
    """``text`` as overlapping windows of at most :data:`SNIPPET_WINDOW_CHARS` characters."""
    return [text[start:end] for start, end in window_spans(text)]


def window_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each window of :func:`snippet_windows`."""
    spans = []
    start = 0
    while start + SNIPPET_WINDOW_CHARS < len(text):
        end = start + SNIPPET_WINDOW_CHARS
        cut = _last_space(text, start + SNIPPET_OVERLAP_CHARS + 1, end)
        if cut != -1:
            end = cut
        spans.append((start, end))
        start = end - SNIPPET_OVERLAP_CHARS
        space = _first_space(text, start, start + SNIPPET_OVERLAP_CHARS // 2)
        if space != -1:
            start = space + 1
    spans.append((start, len(text)))
    return spans


def _last_space(text: str, start: int, end: int) -> int:
    return max(text.rfind(" ", start, end), text.rfind("\n", start, end))


def _first_space(text: str, start: int, end: int) -> int:
    found = [i for i in (text.find(" ", start, end), text.find("\n", start, end)) if i != -1]
    return min(found, default=-1)


def snippets(contents: Sequence[str], match: str) -> list[str]:
    """The snippet of each of ``contents`` for the FTS5 query ``match``, in order."""
    if not contents:
        return []
    db = Database(":memory:")
    try:
        db.execute(_CREATE)
        found = _small_snippets(db, contents, match)
        next_rowid = len(contents)
        for index, content in enumerate(contents):
            if not fits_one_window(content):
                found[index], next_rowid = _windowed_snippet(db, content, match, next_rowid)
    finally:
        db.close()
    return [found.get(index) or _plain_start(content) for index, content in enumerate(contents)]


def _small_snippets(db: Database, contents: Sequence[str], match: str) -> dict[int, str]:
    """One pass for every text that fits a window (rowid = its index)."""
    small = [(index, text) for index, text in enumerate(contents) if fits_one_window(text)]
    if not small:
        return {}
    db.executemany(_INSERT, small)
    return {row[0]: row[1] for row in db.query(_SNIPPET_ALL, (*SNIPPET_ARGS, match))}


def _windowed_snippet(db: Database, text: str, match: str, first_rowid: int) -> tuple[str, int]:
    """The snippet of the first matching window of ``text`` ("" if none), and the next rowid."""
    windows = snippet_windows(text)
    for batch in range(0, len(windows), WINDOWS_PER_BATCH):
        rowid = first_rowid + batch
        chunk = windows[batch : batch + WINDOWS_PER_BATCH]
        db.executemany(_INSERT, ((rowid + i, window) for i, window in enumerate(chunk)))
        hit = db.query_one(_FIRST_MATCH, (match, rowid, rowid + len(chunk) - 1))
        if hit is not None:
            position = hit[0] - first_rowid
            row = db.query_one(_SNIPPET_ONE, (*SNIPPET_ARGS, match, hit[0]))
            snippet = row[0] if row is not None else ""
            if position > 0 and not snippet.startswith(SNIPPET_ELLIPSIS):
                snippet = SNIPPET_ELLIPSIS + snippet
            if position < len(windows) - 1 and not snippet.endswith(SNIPPET_ELLIPSIS):
                snippet += SNIPPET_ELLIPSIS
            return snippet, first_rowid + len(windows)
    return "", first_rowid + len(windows)


def _plain_start(text: str) -> str:
    words = text[:SNIPPET_WINDOW_CHARS].split()
    start = " ".join(words[:SNIPPET_TOKENS])
    return start + SNIPPET_ELLIPSIS if len(words) > SNIPPET_TOKENS else start
