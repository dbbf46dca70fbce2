"""Fewer young-generation collections in the server process: the tail of every live update.

Measured (docs/scaling.md, "Full collections"): each fan-out to 200 tabs has objects in flight
(packets, deltas, coroutines) that a young collection, run every 700 net allocations, promotes
to the older generations. They pile up there until CPython runs a full collection: 60-80 ms
with 200 tabs connected, ~150 ms with 400, about every 17 s while a chat is renamed every
second, and those renames were exactly the slowest ones. Collecting the young generation every
50,000 net allocations instead leaves in-flight objects to their reference counts: no older
collection ran in 45 renames, and the slowest rename went from 135-164 ms to 103 ms. The older
generations keep CPython's thresholds, so the cycles a closed tab leaves (a Reflex state tree
refers to its parent and back) are still collected.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000  # CPython's default is 700


def collect_young_less_often() -> None:
    """Raise the young generation's threshold; leave the older ones as CPython sets them."""
    _young, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
