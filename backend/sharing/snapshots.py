"""What a share link may hold: the bounds of a snapshot, checked before anything is stored.

Pure (no I/O). A snapshot is stored whole, so its size is bounded by the limits a chat
already lives under (:mod:`backend.uploads`, ``backend.config``): a person's message at most
``max_message_bytes``, a reply at most ``model_max_reply_bytes``, each message's files by the
upload rules; and the whole snapshot by :data:`MAX_SNAPSHOT_MESSAGES` and
:data:`MAX_SNAPSHOT_BYTES`, so one link cannot fill the disk. Attachment types are the ones
an upload accepts, so the page never serves a type (HTML, SVG, a script) a browser would run.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chats import MAX_TITLE_CHARS
from backend.config import Settings
from backend.errors import InputTooLargeError, InvalidInputError
from backend.sharing.values import SnapshotMessage
from backend.uploads import (
    IMAGE_TYPES,
    PDF_TYPE,
    TEXT_EXTENSIONS,
    attachment_limits,
    check_message_files,
    check_message_text,
)

MAX_SNAPSHOT_MESSAGES = 2_000
MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024  # texts and files together, as stored
MAX_AUTHOR_CHARS = 200
SERVABLE_TYPES = frozenset({PDF_TYPE, *IMAGE_TYPES, *TEXT_EXTENSIONS.values()})


def checked_snapshot(
    title: str,
    messages: Sequence[SnapshotMessage],
    settings: Settings,
    *,
    include_attachments: bool,
) -> tuple[str, tuple[SnapshotMessage, ...], int]:
    """The title, the messages as they will be stored (files dropped unless the owner chose
    them) and their size in bytes; ``InvalidInputError`` / ``InputTooLargeError`` otherwise."""
    if not isinstance(title, str):
        raise InvalidInputError("a share link's title is text")
    title = title.strip()[:MAX_TITLE_CHARS]
    if not messages:
        raise InvalidInputError("a share link needs at least one message")
    if len(messages) > MAX_SNAPSHOT_MESSAGES:
        raise InvalidInputError(
            f"a share link holds at most {MAX_SNAPSHOT_MESSAGES} messages, not {len(messages)}; "
            "choose an earlier message to end it"
        )
    kept = tuple(_checked_message(m, settings, include_attachments) for m in messages)
    size = len(title.encode()) + sum(_size(m) for m in kept)
    if size > MAX_SNAPSHOT_BYTES:
        raise InputTooLargeError("the shared snapshot", size, MAX_SNAPSHOT_BYTES)
    return title, kept, size


def _checked_message(
    message: SnapshotMessage, settings: Settings, include_attachments: bool
) -> SnapshotMessage:
    if not isinstance(message, SnapshotMessage):
        raise InvalidInputError(f"a snapshot message is a SnapshotMessage, not {message!r:.80}")
    if len(message.author) > MAX_AUTHOR_CHARS:
        raise InvalidInputError(f"an author's name is at most {MAX_AUTHOR_CHARS} characters")
    if message.role == "user":
        check_message_text(message.text, settings)
    elif _utf8_bytes(message.text) > settings.model_max_reply_bytes:
        raise InputTooLargeError(
            "a reply", _utf8_bytes(message.text), settings.model_max_reply_bytes
        )
    if not include_attachments:
        return message.model_copy(update={"attachments": ()})
    limits = attachment_limits(settings)
    check_message_files((len(a.data) for a in message.attachments), limits)
    for attachment in message.attachments:
        if len(attachment.data) > limits.max_file_bytes:
            raise InputTooLargeError(
                f"attachment {attachment.name}", len(attachment.data), limits.max_file_bytes
            )
        if attachment.media_type not in SERVABLE_TYPES:
            raise InvalidInputError(
                f"{attachment.name}: a share link cannot hold files of type "
                f"{attachment.media_type!r}"
            )
    return message


def _size(message: SnapshotMessage) -> int:
    texts = [message.author, message.text, *(a.name for a in message.attachments)]
    return sum(_utf8_bytes(t) for t in texts) + sum(len(a.data) for a in message.attachments)


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))
