"""Fan-out search: every chat's own FTS index asked in turn, hits merged by rank.

The RFC's v1 path and the reference the directory's index (:mod:`backend.chats.index`) is
verified against: it needs no directory-side state, and reads the very data a repair rebuilds
from. Each chat answers with its own top ``limit`` hits; this module merges them.

Invariants:

* Hits are ordered by ``(rank, chat_id, message_id)``, the indexed path's order, so ties
  break the same way on both paths (ranks themselves differ: see :func:`fanout_search`).
* Snippets are computed for the kept hits only, in bounded time (:mod:`backend.chats.snippets`).

Pure code apart from the snippet windowing (an in-memory FTS5 table, no file).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from backend.chats.snippets import snippets
from backend.chats.values import ChatHit


class SearchResultLike(Protocol):
    """What a chat's own hit offers the merge (read only, as a frozen ``SearchResult``)."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def rank(self) -> float: ...


def fanout_search(
    per_chat: Iterable[tuple[str, Sequence[SearchResultLike]]], match: str, limit: int
) -> list[ChatHit]:
    """Merge each chat's own top ``limit`` hits for ``match`` (the FTS5 query every chat was
    asked) by rank and keep ``limit`` globally.

    Ranks come from each chat's own bm25 statistics, so the merge order is an approximation
    of the indexed path's; the set of hits is the same whenever ``limit`` covers them all.
    """
    found: list[tuple[float, str, str, str]] = []
    for chat_id, results in per_chat:
        for result in results:
            found.append((float(result.rank), chat_id, result.id, result.content))
    found.sort(key=lambda hit: hit[:3])
    top = found[:limit]
    texts = snippets([hit[3] for hit in top], match)
    return [
        ChatHit(chat_id=chat_id, message_id=message_id, snippet=snippet, rank=rank)
        for (rank, chat_id, message_id, _), snippet in zip(top, texts, strict=True)
    ]
