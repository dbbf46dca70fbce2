"""Compaction overlays: which stored summaries replace which spans of one path, at read time.

Rows are never deleted by compaction; a read plans overlays over the root-to-leaf path it is
about to return. The rule (``plan_overlays``):

* walk the path from the root; at index ``i`` the candidates are the compactions whose
  ``from_message_id`` is ``path[i]`` and whose ``to_message_id`` is on this path at or after ``i``;
* the newest candidate (last in insertion order) wins and covers ``[i, end]``; the walk resumes
  after ``end``, so overlaps inside a chosen span never apply;
* a compaction with an endpoint off this path is ignored, which is what keeps sibling branches'
  overlays apart even when they share a start message.

An overlay renders as an assistant message whose id is ``COMPACTION_PREFIX + record id``. Such ids
are reserved: writes refuse them, and a stored row carrying the id of one of this session's
compaction records (an overlay echoed back before the write guard existed) is hidden on reads.

Pure code: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from backend.sessions.records import StoredCompaction

COMPACTION_PREFIX = "compaction_"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OverlaySpan:
    """``compaction`` replaces ``path[start : end + 1]``."""

    start: int
    end: int
    compaction: StoredCompaction


def is_compaction_message(message: Mapping[str, Any]) -> bool:
    """True for an overlay (or an echo of one): its id carries the reserved prefix."""
    message_id = message.get("id")
    return isinstance(message_id, str) and message_id.startswith(COMPACTION_PREFIX)


def plan_overlays(
    path_ids: Sequence[str], compactions: Sequence[StoredCompaction]
) -> list[OverlaySpan]:
    """The spans of ``path_ids`` (root first) that overlays replace; see the module docstring."""
    if not compactions or not path_ids:
        return []
    by_start: dict[str, list[StoredCompaction]] = {}
    for compaction in compactions:
        by_start.setdefault(compaction.from_message_id, []).append(compaction)
    position = {message_id: index for index, message_id in enumerate(path_ids)}
    spans: list[OverlaySpan] = []
    index = 0
    while index < len(path_ids):
        chosen: OverlaySpan | None = None
        for compaction in reversed(by_start.get(path_ids[index], ())):
            end = position.get(compaction.to_message_id)
            if end is not None and end >= index:
                chosen = OverlaySpan(index, end, compaction)
                break
        if chosen is None:
            index += 1
            continue
        spans.append(chosen)
        index = chosen.end + 1
    return spans


def collapse(items: Sequence[T], spans: Sequence[OverlaySpan]) -> list[T | StoredCompaction]:
    """``items`` (aligned with the planned path) with every span replaced by its compaction."""
    result: list[T | StoredCompaction] = []
    index = 0
    for span in spans:
        result.extend(items[index : span.start])
        result.append(span.compaction)
        index = span.end + 1
    result.extend(items[index:])
    return result


def overlay_message(compaction: StoredCompaction) -> dict[str, Any]:
    """The message a read shows in place of the span ``compaction`` covers."""
    return {
        "id": COMPACTION_PREFIX + compaction.id,
        "role": "assistant",
        "parts": [{"type": "text", "text": compaction.summary}],
        "createdAt": compaction.created_at,
    }
