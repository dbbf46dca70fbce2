"""Change events: what ``Sessions.subscribe`` listeners receive after a durable write.

One small frozen dataclass per kind, each with ``type`` (a constant tag, handy for ``match`` and
serialisation) and ``session_id``. Events carry the stored form of a message (attachments
inlined), never row internals.

    append      AppendEvent(message, parent_id, inserted)   also for a duplicate (inserted=False)
    update      UpdateEvent(message)                         only when the stored form changed
    delete      DeleteEvent(message_ids)                     ids as passed (deduplicated)
    clear       ClearEvent()
    compact     CompactEvent(compaction)                     an overlay stored by ``compact()``
    compaction  CompactionEvent(compaction)                  an overlay from ``add_compaction()``
    import      ImportEvent(message, parent_id)              one per imported row
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from backend.sessions.records import StoredCompaction


@dataclass(frozen=True, slots=True)
class AppendEvent:
    session_id: str
    message: dict[str, Any]
    parent_id: str | None
    inserted: bool
    type: Literal["append"] = field(default="append", init=False)


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    session_id: str
    message: dict[str, Any]
    type: Literal["update"] = field(default="update", init=False)


@dataclass(frozen=True, slots=True)
class DeleteEvent:
    session_id: str
    message_ids: tuple[str, ...]
    type: Literal["delete"] = field(default="delete", init=False)


@dataclass(frozen=True, slots=True)
class ClearEvent:
    session_id: str
    type: Literal["clear"] = field(default="clear", init=False)


@dataclass(frozen=True, slots=True)
class CompactEvent:
    session_id: str
    compaction: StoredCompaction
    type: Literal["compact"] = field(default="compact", init=False)


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    session_id: str
    compaction: StoredCompaction
    type: Literal["compaction"] = field(default="compaction", init=False)


@dataclass(frozen=True, slots=True)
class ImportEvent:
    session_id: str
    message: dict[str, Any]
    parent_id: str | None
    type: Literal["import"] = field(default="import", init=False)


SessionChangeEvent = (
    AppendEvent
    | UpdateEvent
    | DeleteEvent
    | ClearEvent
    | CompactEvent
    | CompactionEvent
    | ImportEvent
)

SessionChangeListener = Callable[[SessionChangeEvent], object]
