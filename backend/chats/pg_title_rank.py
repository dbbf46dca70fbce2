"""FTS5's ``bm25`` for title searches on PostgreSQL, so the best title comes first on both engines.

``ts_rank`` orders titles differently from FTS5's ``bm25()`` (the order SQLite's title search
returns) in about one search in seven over random small directories, so the PostgreSQL title
search scores its hits here with FTS5's own formula and inputs:

* per query phrase *i*: ``idf = ln((N - n_i + 0.5) / (n_i + 0.5))``, at least ``1e-6``, where
  ``N`` is the number of indexed titles (soft-deleted chats' too, as in the FTS5 table) and
  ``n_i`` how many of them the phrase matches;
* per title: ``score = Σ idf_i · f_i·(k1 + 1) / (f_i + k1·(1 - b + b·D/avgdl))`` with
  ``k1 = 1.2``, ``b = 0.75``, ``f_i`` the phrase's occurrences in the title (a prefix phrase
  counts every token it fits), ``D`` the title's token count and ``avgdl`` the mean over the
  indexed titles; the rank is ``-score``, lower first, as FTS5's.

The operations run in the order FTS5 runs them, in doubles, so equal inputs give equal ranks
and ties fall to the same ``updated_at`` / ``id`` order. Pure code: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from backend.sessions.fts_tokens import TITLES

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
_PHRASE = re.compile(r'"((?:[^"]|"")*)"(\*?)')


@dataclass(frozen=True)
class Phrase:
    """One quoted phrase of an FTS5 title query: its text (as quoted), tokens and prefix mark."""

    text: str
    tokens: tuple[str, ...]
    prefix: bool

    @property
    def match(self) -> str:
        """The phrase alone as an FTS5 query (what ``match_tsquery`` reads)."""
        return '"' + self.text.replace('"', '""') + '"' + ("*" if self.prefix else "")


def phrases_of(match: str) -> list[Phrase]:
    """The phrases of a title query ``backend.chats.text.prefix_query`` built."""
    return [
        Phrase(text, tuple(TITLES.tokens(text)), bool(star))
        for raw, star in _PHRASE.findall(match)
        for text in [raw.replace('""', '"')]
    ]


def occurrences(phrase: Phrase, tokens: Sequence[str]) -> int:
    """How many times ``phrase`` occurs in ``tokens`` (FTS5's phrase instances)."""
    wanted = phrase.tokens
    if not wanted:
        return 0
    last = len(wanted) - 1
    found = 0
    for start in range(len(tokens) - last):
        if all(tokens[start + k] == wanted[k] for k in range(last)):
            token = tokens[start + last]
            if token == wanted[last] or (phrase.prefix and token.startswith(wanted[last])):
                found += 1
    return found


def idf(titles: int, hits: int) -> float:
    value = math.log((titles - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else MIN_IDF


def bm25_rank(
    phrases: Sequence[Phrase], idfs: Sequence[float], tokens: Sequence[str], avgdl: float
) -> float:
    """FTS5's ``bm25()`` of one title (negative: lower ranks first)."""
    size = float(len(tokens))
    score = 0.0
    for phrase, weight in zip(phrases, idfs, strict=True):
        frequency = float(occurrences(phrase, tokens))
        score += weight * ((frequency * (K1 + 1.0)) / (frequency + K1 * (1 - B + B * size / avgdl)))
    return -1.0 * score
