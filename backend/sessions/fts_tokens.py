"""FTS5's tokenizers in Python: the tokens SQLite's ``unicode61`` (+ ``porter``) reads from a text.

A search engine without FTS5 (PostgreSQL) indexes and queries these tokens, so it finds what
the SQLite engine finds: its own parser reads ``some.words`` as a host name, ``some-words`` as
one compound, hides ``bar`` in ``foo.bar.com`` and keeps ``Café`` apart from ``cafe``.

* **Boundaries**: a token is a maximal run of token characters that does not start with a
  combining diacritic; which code points those are is FTS5's own table
  (:mod:`backend.sessions.fts_unicode`, measured from SQLite: its Unicode is older than
  Python's and counts unassigned code points as token characters).
* **Folding**, per code point and also FTS5's table: lower case, and with ``remove_diacritics``
  1 or 2 the accents removed (a combining mark vanishes; a token made only of such marks is no
  token). Folding never turns a token character into a separator or a separator into
  anything, and only the marks that cannot start a token vanish (the tests check it), so a
  text is cut first and each distinct cut token folded once (a memo per tokenizer).
* **Stemming** (``porter``): :func:`backend.sessions.porter.stem` on each token.

A token's **position** is its index in the list; FTS5 phrases match consecutive positions.

Pure code: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from backend.sessions import fts_unicode
from backend.sessions.porter import stem


@dataclass(frozen=True)
class Tokenizer:
    """One FTS5 tokenizer configuration (``spec`` is its text in a ``CREATE VIRTUAL TABLE``)."""

    remove_diacritics: int
    porter: bool

    @property
    def spec(self) -> str:
        base = "unicode61"
        if self.remove_diacritics != 1:  # 1 is FTS5's default
            base += f" remove_diacritics {self.remove_diacritics}"
        return f"porter {base}" if self.porter else base

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``, in order.

        ``text`` is stored text (``backend.storage.well_formed_text``): FTS5 never sees a lone
        surrogate; here one would end a token.
        """
        memo = _memo(self)
        if len(memo) > _MEMO_SIZE:
            memo.clear()
        known, read = memo.get, self._read
        cut = _ASCII_TOKEN if text.isascii() else _TOKEN
        # One lookup per token (another thread may clear the memo between two).
        return [
            token if (token := known(raw)) is not None else memo.setdefault(raw, read(raw))
            for raw in cut.findall(text)
        ]

    def forget(self) -> None:
        """Empty the memo of read tokens (a benchmark's cold start)."""
        _memo(self).clear()

    def _read(self, raw: str) -> str:
        """One token as cut from the text, folded (and stemmed)."""
        folded = raw.translate(fold_map(self.remove_diacritics))
        return stem(folded) if self.porter else folded


MESSAGES = Tokenizer(remove_diacritics=1, porter=True)
"""Messages and shared memory (``backend.sessions.search.FTS_TOKENIZER``)."""
TITLES = Tokenizer(remove_diacritics=2, porter=False)
"""Chat titles (``backend.chats.chat_records``' ``chat_titles``)."""


def _ranges(spec: str) -> list[tuple[int, int]]:
    pairs = (item.split(":") for item in spec.split())
    return [(int(first, 16), int(last, 16)) for first, last in pairs]


def _without(
    ranges: list[tuple[int, int]], removed: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The code points of ``ranges`` outside ``removed`` (both sorted, disjoint, inclusive)."""
    kept: list[tuple[int, int]] = []
    for first, last in ranges:
        for cut_first, cut_last in removed:
            if cut_last < first or cut_first > last:
                continue
            if cut_first > first:
                kept.append((first, cut_first - 1))
            first = cut_last + 1
            if first > last:
                break
        if first <= last:
            kept.append((first, last))
    return kept


def _char_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(first)) + ("-" + re.escape(chr(last)) if last > first else "")
        for first, last in ranges
    )


_SEPARATORS = sorted([*_ranges(fts_unicode.SEPARATORS), (0xD800, 0xDFFF)])
_TOKEN_CHARS = _without([(0, 0x10FFFF)], _SEPARATORS)
_STARTS = _without(_TOKEN_CHARS, _ranges(fts_unicode.CONTINUATIONS))
_TOKEN = re.compile(f"[{_char_class(_STARTS)}][{_char_class(_TOKEN_CHARS)}]*")
"""A token starts with a token character that is not a combining diacritic. The classes name
the token characters, not the separators: ``re`` finds a character in a class of ranges by
scanning them, and most characters of a text are token characters."""
_ASCII_TOKEN = re.compile("[0-9A-Za-z]+")
"""The same pattern for a text without a character beyond ASCII (most texts): a small class
is about twice as fast (``tests/sessions/test_fts_tokens.py`` checks the two agree)."""
_MEMO_SIZE = 100_000


@cache
def fold_map(remove_diacritics: int) -> dict[int, str]:
    """``{code point: folded form}`` of every code point the level changes ("" drops it)."""
    folded: dict[int, str] = {}
    for level in (0, remove_diacritics) if remove_diacritics else (0,):
        for run in fts_unicode.FOLDS[level].split():
            first, last, step, delta = (int(field, 16) for field in run.split(":"))
            for point in range(first, last + 1, step):
                folded[point] = "" if delta == fts_unicode.DROP else chr(point + delta)
    return folded


@cache
def _memo(tokenizer: Tokenizer) -> dict[str, str]:
    return {}


def is_separator(char: str) -> bool:
    return not any(first <= ord(char) <= last for first, last in _TOKEN_CHARS)


def starts_a_token(char: str) -> bool:
    return _TOKEN.fullmatch(char) is not None
