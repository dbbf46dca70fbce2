"""Reciprocal rank fusion: one order from the full-text ranking and the meaning ranking.

``score(hit) = Σ weight / (K + rank)`` over the rankings that hold it (rank from 1). A hit
both rankings hold scores above one only one of them holds, and the full-text ranking has
the greater weight, so a text holding the exact words stays ahead of one that only means
something close. Ties keep the full-text order, then the meaning order. Pure code.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = 60
WORDS_WEIGHT = 2.0
MEANING_WEIGHT = 1.0
Key = TypeVar("Key", bound=Hashable)


def fuse_ranks(words: Sequence[Key], meaning: Sequence[Key]) -> list[Key]:
    """The keys of both rankings (each best first), fused best first."""
    scores: dict[Key, float] = {}
    first_seen: dict[Key, int] = {}
    for weight, ranking in ((WORDS_WEIGHT, words), (MEANING_WEIGHT, meaning)):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (K + rank)
            first_seen.setdefault(key, len(first_seen))
    return sorted(scores, key=lambda key: (-scores[key], first_seen[key]))
