"""Search-as-you-type that always ends on the newest query, one backend search at a time.

The input is debounced in the browser (``SEARCH_DEBOUNCE_MS``), so a burst of keystrokes sends
one query; keystrokes that still arrive while a search runs do not start another: the running
loop notices the query moved on and searches once more for the newest one. A tab therefore has
at most one search of a kind in flight, typing never queues one search per keystroke, and a
result is shown only if its query is still the one in the input (an older result never
overwrites a newer one).

Pure asyncio: the state supplies ``take`` / ``show``, which read and write it under its lock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

SEARCH_DEBOUNCE_MS = 250
# A search flagged as running for longer than this died with its worker (the flag lives in the
# tab's state, which outlives a worker when states are kept in Redis): start a new one.
SEARCH_STALE_S = 30.0


def search_is_running(started_at: float, now: float) -> bool:
    """Whether a loop started at ``started_at`` (wall clock, 0 = none) still owns the search."""
    return started_at > 0 and now - started_at < SEARCH_STALE_S


async def search_newest(
    take: Callable[[str | None], Awaitable[str | None]],
    search: Callable[[str], Awaitable[T]],
    show: Callable[[str, T], Awaitable[None]],
) -> int:
    """Search until the shown results belong to the current query; return how many searches ran.

    ``take(last_searched)`` returns the query to search next, or ``None`` when the current
    query is ``last_searched`` (or blank). It must decide *and* release the running flag in one
    step under the state's lock, so a keystroke landing as the loop ends is never dropped.
    ``show(query, result)`` must show the result only if ``query`` is still current.
    """
    searched: str | None = None
    runs = 0
    while (query := await take(searched)) is not None:
        result = await search(query)
        runs += 1
        await show(query, result)
        searched = query
    return runs
