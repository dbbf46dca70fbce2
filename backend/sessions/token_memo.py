"""TokenMemo: the token estimate of one branch with overlays applied, kept up to date by appends.

``Session.token_estimate()`` is asked after every turn (auto-compaction decides on it), so
walking the whole path each time would make a long conversation quadratic. The store derives a
memo once per leaf from a content-free path walk and then extends it in place as children of
that leaf are appended, which costs nothing per append.

Invariants:

* ``total`` is the sum of the estimates of the ``counted`` rows (visible rows no overlay
  covers) plus each applied overlay's summary estimate; the store adjusts it when a counted
  row is updated.
* A memo is extended only by a new child of its own leaf that cannot change how overlays apply
  (its id is neither an overlay echo nor an endpoint of a stored overlay) and while the walk
  is below the path cap (past it the oldest row falls off). Anything else re-derives.

Pure code: no I/O. The store supplies the path rows and the overlays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from backend.sessions.overlays import COMPACTION_PREFIX, plan_overlays
from backend.sessions.paths import MAX_PATH_DEPTH
from backend.sessions.records import StoredCompaction
from backend.sessions.tokens import estimate_string_tokens


@dataclass(slots=True)
class TokenMemo:
    """Token estimate of the path ending at ``leaf_id``; ``counted`` rows contribute."""

    leaf_id: str | None
    counted: set[str]
    total: float
    walked: int

    @property
    def estimate(self) -> int:
        return max(0, math.ceil(self.total))

    def extends_to(self, parent_id: str | None) -> bool:
        """Whether a new child of ``parent_id`` continues this memo's path (overlays aside)."""
        # Past the cap the oldest row falls off the walk: re-derive instead.
        return (
            self.leaf_id is not None and self.leaf_id == parent_id and self.walked <= MAX_PATH_DEPTH
        )

    def extend(self, message_id: str, estimate: int) -> None:
        self.leaf_id = message_id
        self.counted.add(message_id)
        self.total += estimate
        self.walked += 1


def derive_memo(
    leaf_id: str,
    path: Sequence[tuple[str, int]],
    hidden: frozenset[str],
    compactions: Sequence[StoredCompaction],
) -> TokenMemo:
    """The memo of ``path`` (``(id, token_estimate)`` rows, root first, hidden ones included)."""
    visible = [row for row in path if row[0] not in hidden]
    spans = plan_overlays([message_id for message_id, _ in visible], compactions)
    covered: set[int] = set()
    total: float = 0
    for span in spans:
        covered.update(range(span.start, span.end + 1))
        total += estimate_string_tokens(span.compaction.summary)
    counted: set[str] = set()
    for index, (message_id, estimate) in enumerate(visible):
        if index not in covered:
            counted.add(message_id)
            total += estimate
    return TokenMemo(leaf_id, counted, total, len(path))


def names_an_overlay(message_id: str, compactions: Sequence[StoredCompaction]) -> bool:
    """Whether a row with this id can change how overlays apply to its path."""
    return message_id.startswith(COMPACTION_PREFIX) or any(
        message_id in (c.from_message_id, c.to_message_id) for c in compactions
    )
