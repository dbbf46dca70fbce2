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
  token). Folding never turns a token character into a separator (the tests check it), so a
  text is folded whole before it is cut, which keeps the work in C.
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
from backend.storage import well_formed_text


@dataclass(frozen=True)
class Tokenizer:
    """One FTS5 tokenizer configuration (``spec`` is its text in a ``CREATE VIRTUAL TABLE``)."""

    remove_diacritics: int
    porter: bool

    @property
    def spec(self) -> str:
        base = (
            "unicode61"
            if self.remove_diacritics == 1
            else (f"unicode61 remove_diacritics {self.remove_diacritics}")
        )
        return f"porter {base}" if self.porter else base

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``, in order (lone surrogates read as U+FFFD, as stored)."""
        found = _TOKEN.findall(well_formed_text(text).translate(fold_map(self.remove_diacritics)))
        return [stem(token) for token in found] if self.porter else found


MESSAGES = Tokenizer(remove_diacritics=1, porter=True)
"""Messages and shared memory (``backend.sessions.search.FTS_TOKENIZER``)."""
TITLES = Tokenizer(remove_diacritics=2, porter=False)
"""Chat titles (``backend.chats.directory``'s ``chat_titles``)."""


def _ranges(spec: str) -> list[tuple[int, int]]:
    pairs = (item.split(":") for item in spec.split())
    return [(int(first, 16), int(last, 16)) for first, last in pairs]


def _char_class(ranges: list[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(first)) + ("-" + re.escape(chr(last)) if last > first else "")
        for first, last in ranges
    )


_SEPARATORS = _char_class([*_ranges(fts_unicode.SEPARATORS), (0xD800, 0xDFFF)])
_CONTINUATIONS = _char_class(_ranges(fts_unicode.CONTINUATIONS))
_TOKEN = re.compile(f"[^{_SEPARATORS}{_CONTINUATIONS}][^{_SEPARATORS}]*")
"""A token starts with a token character that is not a combining diacritic."""


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


def is_separator(char: str) -> bool:
    return re.fullmatch(f"[{_SEPARATORS}]", char) is not None


def starts_a_token(char: str) -> bool:
    return _TOKEN.fullmatch(char) is not None
