"""The small immutable values the store hands back, and the ``OMITTED`` sentinel.

Outcome values instead of bare booleans or tuples: a caller reads ``result.inserted``, never
``result[0]``. Timestamps are integer milliseconds since the epoch; sizes are UTF-8 bytes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final


class _Omitted(enum.Enum):
    """Type of ``OMITTED``: "no parent given", distinct from ``None`` ("make a root")."""

    OMITTED = "OMITTED"

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Final = _Omitted.OMITTED


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What an append did: ``inserted`` is ``False`` when the id already existed (or was refused).

    ``message`` is the stored form: the written message when inserted, the message already stored
    under that id otherwise. ``parent_id`` is the parent it was written under (inserted only: a
    run event carries it, so a view can place the message without reading it back).
    """

    inserted: bool
    message: dict[str, Any]
    parent_id: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class RecentHistory:
    """A byte-budgeted suffix of a path: always the newest message, ``truncated`` when cut."""

    messages: list[dict[str, Any]]
    truncated: bool
    total_content_bytes: int


@dataclass(frozen=True, slots=True)
class RowStat:
    """One visible row of a path, measured without loading its content.

    ``bytes`` charges the row, its continuation rows and the base64 size of every attachment it
    references: what hydrating the message costs.
    """

    id: str
    role: str
    bytes: int
    token_estimate: int
    created_at: int


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One full-text hit. ``rank`` is FTS5's bm25 rank: lower (more negative) is better, and
    ranks of one query are comparable across conversations (a directory merges on it)."""

    id: str
    role: str
    content: str
    rank: float


@dataclass(frozen=True, slots=True)
class StoredCompaction:
    """A summary overlay: replaces ``from_message_id..to_message_id`` of a path at read time."""

    id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: int


@dataclass(frozen=True, slots=True)
class CompactResult:
    """What a compaction function proposes (and ``compact()`` stored): a range and its summary."""

    from_message_id: str
    to_message_id: str
    summary: str


@dataclass(frozen=True, slots=True)
class TreeEntry:
    """One stored row of a conversation's tree, as ``Session.tree()`` walks it (insertion
    order): the message as written (attachments inline), its parent and its timestamp."""

    message: dict[str, Any]
    parent_id: str | None
    created_at: int


@dataclass(frozen=True, slots=True)
class StoredEntry:
    """One row as ``Session.stored_tree()`` reads it: the stored JSON text (attachments as
    ``attachment:sha256:<hex>`` pointers, the hashes in ``attachments``), parent and time."""

    id: str
    content: str
    parent_id: str | None
    created_at: int
    attachments: frozenset[str]
