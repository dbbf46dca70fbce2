"""A chat message and its parts as one typed value, for every layer that hands one on.

Sessions store a message as its JSON form (the AI SDK ``UIMessage``: ``id``, ``role``,
``parts``, ``metadata``); the runtime writes them and announces them in its run events; views
render them. :class:`Message` is that form, typed and immutable, so a run event carries a
message a subscriber can read without guessing keys, and ``as_stored`` gives back exactly the
JSON the session holds.

Parts stay the AI SDK's own mappings (``{"type": "text", "text": ...}``, ``{"type": "file",
"mediaType", "url", "filename"}``, ``{"type": "tool-<name>", "toolCallId", "input", "state",
"output" | "errorText"}``): their shapes are the wire format, checked where they are stored
(``backend.sessions.sanitize``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Part = Mapping[str, Any]

AUTHOR_KEY = "author"
"""A user message's metadata key: who sent it (:class:`Author`'s stored form)."""
REQUESTED_BY_KEY = "requestedBy"
"""An assistant reply's metadata key: who asked for it (a send, a retry, an edit). The reply
itself is the model's; in a shared chat this says which member's request it answers."""
MAX_AUTHOR_NAME_CHARS = 64  # a username's own bound (backend.accounts.names)


@dataclass(frozen=True, slots=True)
class Author:
    """Who sent a message or asked for a reply: an account id and the name shown for it.

    The name is the username at the time of writing, stored with the message so a transcript
    (or an export, or a share link's snapshot) shows it without asking the accounts store.
    """

    id: str
    name: str

    def as_metadata(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name}

    @classmethod
    def from_metadata(cls, value: object) -> Author | None:
        """The author a stored ``{"id", "name"}`` names; None for anything else (a message
        written before authors were recorded, an import, a malformed value)."""
        if not isinstance(value, Mapping):
            return None
        author_id, name = value.get("id"), value.get("name")
        if not isinstance(author_id, str) or not author_id:
            return None
        shown = name if isinstance(name, str) and name else author_id
        return cls(id=author_id, name=shown[:MAX_AUTHOR_NAME_CHARS])


@dataclass(frozen=True, slots=True)
class Message:
    """One stored message: who wrote it, its parts in order, and its metadata (an assistant
    reply's ``status``, ``runId``, ``model``, ``endpoint``, ``agent``, ``usage``, ``error``)."""

    id: str
    role: str
    parts: tuple[Part, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> Message:
        """The typed form of a message as a session holds it."""
        parts = stored.get("parts")
        metadata = stored.get("metadata")
        return cls(
            id=str(stored.get("id", "")),
            role=str(stored.get("role", "")),
            parts=tuple(p for p in parts if isinstance(p, Mapping))
            if isinstance(parts, list)
            else (),
            metadata=metadata if isinstance(metadata, Mapping) else {},
        )

    def as_stored(self) -> dict[str, Any]:
        """The JSON form a session stores and reads back."""
        return {
            "id": self.id,
            "role": self.role,
            "parts": [dict(part) for part in self.parts],
            "metadata": dict(self.metadata),
        }

    @property
    def status(self) -> str:
        """An assistant reply's run status ("queued", "running", "completed", ...), or ""."""
        return str(self.metadata.get("status") or "")

    def has_files(self) -> bool:
        return any(part.get("type") == "file" for part in self.parts)

    @property
    def author(self) -> Author | None:
        """Who sent a user message (``metadata.author``); None when not recorded."""
        return Author.from_metadata(self.metadata.get(AUTHOR_KEY))

    @property
    def requested_by(self) -> Author | None:
        """Who asked for an assistant reply (``metadata.requestedBy``); None when not recorded."""
        return Author.from_metadata(self.metadata.get(REQUESTED_BY_KEY))


@dataclass(frozen=True, slots=True)
class WrittenMessage:
    """A message a run just stored, as its run event carries it: the message, the parent it
    was written under (None: a root), when, and what a transcript window's byte budget
    charges for it (None when unknown without a read: it holds a file), so a view shows it
    without reading it back."""

    message: Message
    parent_id: str | None
    sent_at: int
    stored_bytes: int | None = None

    @property
    def id(self) -> str:
        return self.message.id
