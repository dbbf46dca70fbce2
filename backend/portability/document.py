"""The shapes every import format is turned into, and the constants of the export format.

An import format (``backend.portability.formats``) reads its source and yields, one at a
time, either an :class:`ImportedConversation` (what to write: a tree of messages in
insertion order, the visible leaf last) or a :class:`Refused` (one source conversation that
could not be read, and why). The importer never sees a source's own shape, so every format
gets the same de-duplication, atomic writes and report. The export format itself is
documented in ``docs/export-format.md``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from backend.chats import MAX_TITLE_CHARS, SNIPPET_ELLIPSIS, ChatSummary, SourceKey
from backend.errors import InvalidInputError
from backend.runtime import Conversation
from backend.sessions import StoredCompaction
from backend.sessions.search import indexed_text

CHAT_FORMAT = "chats.chat"
"""``format`` of one exported chat document."""
ZIP_EXPORT_FORMAT = "chats.archive"  # the on-disk value keeps its first name
"""``format`` of the ``manifest.json`` of a ``.zip`` export."""
EXPORT_VERSION = 1
NATIVE_SOURCE = "chats"
"""``SourceKey.format`` of a chat imported from this project's own export."""
MANIFEST_NAME = "manifest.json"
CHATS_FOLDER = "chats/"
ATTACHMENTS_FOLDER = "attachments/"
UNTITLED = "Imported chat"

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    message: Message
    parent_id: str | None
    created_at: int


@dataclass(frozen=True, slots=True)
class StateDocument:
    data: dict[str, Any]
    updated_at: int


@dataclass(slots=True)
class ImportedConversation:
    """One conversation to write. ``messages`` are in insertion order: parents before
    children where the source allows, and the visible leaf last (it becomes the active leaf)."""

    source: SourceKey
    title: str
    created_at: int
    updated_at: int
    messages: list[ImportedMessage]
    compactions: list[StoredCompaction] = field(default_factory=list)
    record: Conversation | None = None
    state: StateDocument | None = None
    preview_text: str | None = None
    """The sidebar preview as the source had it (an export; "" for none); None: derive it."""
    archived_at: int | None = None
    """When the source archived it (an export of this app); a new chat starts archived."""
    pinned_at: int | None = None
    """When the source pinned it (an export of this app); a new chat starts pinned."""

    def digest(self) -> str:
        """Fingerprint of everything written: equal digests mean a re-import has nothing new."""
        hasher = hashlib.sha256()
        for item in (self.title, self.created_at, self.updated_at):
            hasher.update(json.dumps(item).encode())
        for entry in self.messages:
            hasher.update(_canonical([entry.message, entry.parent_id, entry.created_at]))
        for compaction in self.compactions:
            hasher.update(_canonical(_fields(compaction)))
        if self.state is not None:
            hasher.update(_canonical([self.state.data, self.state.updated_at]))
        return hasher.hexdigest()

    def preview(self) -> str | None:
        """The sidebar preview: the source's, else the text of the newest message with text."""
        if self.preview_text is not None:
            return self.preview_text or None
        for entry in reversed(self.messages):
            text = indexed_text(entry.message)
            if text:
                return text
        return None


@dataclass(frozen=True, slots=True)
class Refused:
    """A source conversation that was not imported: ``item`` names it, ``reason`` says why."""

    item: str
    reason: str


def _fields(compaction: StoredCompaction) -> list[Any]:
    return [
        compaction.id,
        compaction.summary,
        compaction.from_message_id,
        compaction.to_message_id,
        compaction.created_at,
    ]


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "surrogatepass"
    )


def fit_title(title: object) -> str:
    """A source title as a chat title: trimmed, never blank, at most ``MAX_TITLE_CHARS``."""
    text = " ".join(str(title).split()) if isinstance(title, str) else ""
    if not text:
        return UNTITLED
    if len(text) > MAX_TITLE_CHARS:
        text = text[: MAX_TITLE_CHARS - 1].rstrip() + SNIPPET_ELLIPSIS
    return text


def seconds_to_ms(value: object, default: int) -> int:
    """A source timestamp (epoch seconds, float or int, or ISO 8601 text) in integer ms."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int | float):
        if value != value or value <= 0:  # NaN, zero, negative
            return default
        return round(value * 1000)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return default
        return round(parsed.timestamp() * 1000)
    return default


def as_object(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (sources leave fields out)."""
    return value if isinstance(value, dict) else {}


def check_exportable(summary: ChatSummary) -> None:
    """A temporary chat never leaves the app: exporting one is refused (issue 29)."""
    if summary.temporary:
        raise InvalidInputError(f"chat {summary.id} is temporary: it is not exported")
