"""Serialisable row types the states hold and the components render."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from backend.endpoints import choice_label
from backend.models import ModelRef, ReplyUsage
from backend.transcript import TranscriptEntry
from backend.uploads import format_size


@dataclasses.dataclass(frozen=True)
class ChatRow:
    """Immutable, so every state may share one instance: the sidebar's 40 slot defaults are not
    deep-copied into each tab's state (bench/load_bench.py: 207 -> 191 KB per idle tab)."""

    id: str = ""
    title: str = ""
    preview: str = ""
    updated_iso: str = ""
    updated_at: int = 0
    archived: bool = False
    pinned: bool = False

    def __deepcopy__(self, _memo: dict[int, object]) -> ChatRow:
        return self


@dataclasses.dataclass
class AgentChoiceRow:
    """An agent a new chat can start with ("New chat with ▾")."""

    id: str = ""
    name: str = ""
    is_default: bool = False


@dataclasses.dataclass
class UserRow:
    id: str = ""
    username: str = ""
    role: str = "user"
    disabled: bool = False


@dataclasses.dataclass
class SnippetPiece:
    text: str = ""
    hit: bool = False


@dataclasses.dataclass
class HitRow:
    chat_id: str = ""
    message_id: str = ""
    title: str = ""
    pieces: list[SnippetPiece] = dataclasses.field(default_factory=list)
    archived: bool = False  # the hit's chat is archived (results label it)
    shared_by: str = ""  # the owner's username when the chat is shared with the searcher


@dataclasses.dataclass
class ToolRow:
    name: str = ""
    input: str = ""
    output: str = ""


@dataclasses.dataclass
class FileRow:
    """A document chip: name, size as read ("14.2 KB"), and its bytes as a data: URL."""

    name: str = ""
    size: str = ""
    url: str = ""


@dataclasses.dataclass
class EntryRow:
    id: str = ""
    role: str = ""
    text: str = ""
    images: list[str] = dataclasses.field(default_factory=list)
    tools: list[ToolRow] = dataclasses.field(default_factory=list)
    status: str = ""
    pending: bool = False  # the reply is queued or still being written
    is_summary: bool = False
    position: str = ""  # "2/3" when the message has siblings, else ""
    prev_sibling_id: str = ""
    next_sibling_id: str = ""
    sent_at: int = 0  # ms since the epoch; 0 when unknown
    files: list[FileRow] = dataclasses.field(default_factory=list)
    model_label: str = ""  # which model wrote an assistant reply ("" when unknown)
    error: str = ""  # why a failed reply stopped
    usage_label: str = ""  # "412 tokens in · 96 out", or "~… (estimate)"; "" when unknown
    author: str = ""  # who sent a user message, or asked for a reply ("" when not recorded)


@dataclasses.dataclass
class MemoryRow:
    label: str = ""
    content: str = ""


def iso_time(ms: int) -> str:
    """Milliseconds since the epoch as ISO 8601 (UTC), as ``rx.moment`` reads a time."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def chat_row(summary: object) -> ChatRow:
    updated_at = int(getattr(summary, "updated_at", 0) or 0)
    return ChatRow(
        id=str(getattr(summary, "id", "")),
        title=str(getattr(summary, "title", "")),
        preview=str(getattr(summary, "last_message_preview", "") or ""),
        updated_iso=iso_time(updated_at),
        updated_at=updated_at,
        archived=getattr(summary, "archived_at", None) is not None,
        pinned=getattr(summary, "pinned_at", None) is not None,
    )


def entry_row(entry: TranscriptEntry) -> EntryRow:
    return EntryRow(
        id=entry.id,
        role=entry.role,
        text=entry.text,
        images=list(entry.images),
        tools=[ToolRow(t.name, t.input, t.output) for t in entry.tool_calls],
        status=entry.status,
        error=entry.error,
        pending=entry.status in ("queued", "running"),
        is_summary=entry.is_summary,
        position=f"{entry.sibling_index}/{entry.sibling_count}" if entry.sibling_count > 1 else "",
        prev_sibling_id=entry.prev_sibling_id,
        next_sibling_id=entry.next_sibling_id,
        sent_at=entry.sent_at,
        files=[FileRow(f.name, format_size(f.size), f.url) for f in entry.files],
        model_label=(
            choice_label(ModelRef(entry.endpoint, entry.model))
            if entry.role == "assistant" and entry.model
            else ""
        ),
        usage_label=usage_label(entry.usage) if entry.role == "assistant" else "",
        author=entry.author_name if entry.role == "user" else entry.requested_by_name,
    )


def usage_label(usage: ReplyUsage | None) -> str:
    """A reply's tokens as read under it; an estimate says so (the server gave no usage)."""
    if usage is None:
        return ""
    if not usage.estimated:
        return f"{usage.input_tokens:,} tokens in · {usage.output_tokens:,} out"
    if not usage.input_tokens:
        return f"~{usage.output_tokens:,} tokens out (estimate)"
    return f"~{usage.input_tokens:,} tokens in · ~{usage.output_tokens:,} out (estimate)"
