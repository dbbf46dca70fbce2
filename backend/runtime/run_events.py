"""The run events, one frozen type per kind: what a conversation's runs announce.

Publishers build one of these and :class:`backend.runtime.events.EventLog` stamps it with its
sequence number; subscribers dispatch on the type (``match event.payload``), never on a string.
Each type's ``TYPE`` is its name on the wire (``RunEvent.type``), and ``data()`` the JSON
mapping ``RunEvent.data`` keeps for readers outside the process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from backend.messages import Message, WrittenMessage
from backend.runtime.records import EventType
from backend.sessions.sanitize import dump_json


def _written(message: WrittenMessage) -> dict[str, Any]:
    return {
        "message": message.message.as_stored(),
        "parent_id": message.parent_id,
        "sent_at": message.sent_at,
        "stored_bytes": message.stored_bytes,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunQueued:
    """A run was stored: the messages it wrote, oldest first (the user's message of a send or
    an edit, then the reply's placeholder)."""

    TYPE: ClassVar[EventType] = "run.queued"
    kind: str  # "send" | "regenerate" | "edit"
    user_message_id: str
    assistant_message_id: str
    written: tuple[WrittenMessage, ...] = ()

    def data(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "user_message_id": self.user_message_id,
            "assistant_message_id": self.assistant_message_id,
            "written": [_written(w) for w in self.written],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted:
    """A run was claimed: the agent version and model it answers with."""

    TYPE: ClassVar[EventType] = "run.started"
    user_message_id: str
    assistant_message_id: str
    agent_id: str
    agent_version: int
    model: str
    endpoint: str

    def data(self) -> dict[str, Any]:
        return {
            "user_message_id": self.user_message_id,
            "assistant_message_id": self.assistant_message_id,
            "agent_id": self.agent_id,
            "agent_version": self.agent_version,
            "model": self.model,
            "endpoint": self.endpoint,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCompacted:
    """The older part of the thread was summarised before the run's prompt was built."""

    TYPE: ClassVar[EventType] = "context.compacted"
    from_message_id: str
    to_message_id: str
    summary_version: int
    tokens_before: int
    tokens_after: int

    def data(self) -> dict[str, Any]:
        return {
            "from_message_id": self.from_message_id,
            "to_message_id": self.to_message_id,
            "summary_version": self.summary_version,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageDelta:
    """Streamed reply text (well-formed Unicode), in order."""

    TYPE: ClassVar[EventType] = "message.delta"
    message_id: str
    text: str

    def data(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "text": self.text}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCalled:
    """A tool call of the reply, as its AI SDK part: ``state`` "input-available" before the
    tool runs, then "output-available" (``output``) or "output-error" (``errorText``)."""

    TYPE: ClassVar[EventType] = "tool.call"
    assistant_message_id: str
    part: Mapping[str, Any] = field(default_factory=dict)

    def data(self) -> dict[str, Any]:
        return {"assistant_message_id": self.assistant_message_id, **self.part}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCompleted:
    """The reply is stored in full. ``written`` is it as stored (parts, tool parts, metadata
    with status, model, usage); None when another process answered (only its text is known)."""

    TYPE: ClassVar[EventType] = "run.completed"
    assistant_message_id: str
    text: str
    written: WrittenMessage | None = None

    def data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "assistant_message_id": self.assistant_message_id,
            "text": self.text,
        }
        if self.written is not None:
            data["written"] = _written(self.written)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed:
    """The run ended with an error (a sentence); ``error_type`` is "" for a run another
    process answered; ``partial`` says whether some of the reply was kept."""

    TYPE: ClassVar[EventType] = "run.failed"
    assistant_message_id: str
    error: str
    error_type: str = ""
    partial: bool = False

    def data(self) -> dict[str, Any]:
        return {
            "assistant_message_id": self.assistant_message_id,
            "error": self.error,
            "error_type": self.error_type,
            "partial": self.partial,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCancelled:
    """The run was stopped (by a person, or before it began)."""

    TYPE: ClassVar[EventType] = "run.cancelled"
    assistant_message_id: str
    partial: bool = False

    def data(self) -> dict[str, Any]:
        return {"assistant_message_id": self.assistant_message_id, "partial": self.partial}


RunPayload = (
    RunQueued
    | RunStarted
    | ContextCompacted
    | MessageDelta
    | ToolCalled
    | RunCompleted
    | RunFailed
    | RunCancelled
)
RunEnd = RunCompleted | RunFailed | RunCancelled
"""The events that end a run (``RUN_END_EVENTS`` by name)."""


def written_now(stored: Mapping[str, Any], parent_id: str | None, sent_at: int) -> WrittenMessage:
    """A message a session just stored (its stored form), for a run event: measured as
    ``backend.sessions.paths`` measures its row, unless it holds a file (whose stored size
    depends on the attachment pool)."""
    message = Message.from_stored(stored)
    size = None if message.has_files() else len(dump_json(stored)[1])
    return WrittenMessage(message, parent_id, sent_at, size)
