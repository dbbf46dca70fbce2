"""The user's messages as the runtime stores them: parts checked before anything is stored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from backend.config import Settings
from backend.errors import InvalidInputError
from backend.messages import AUTHOR_KEY, Author
from backend.uploads import attachment_limits, check_message_text, image_file_parts


def user_parts(
    settings: Settings,
    text: str,
    images: Sequence[str],
    attachments: Sequence[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """The parts of a user message; bad input raises before anything is stored."""
    if not isinstance(text, str):
        raise TypeError("message text must be a string")
    check_message_text(text, settings)
    parts: list[dict[str, Any]] = [dict(p) for p in attachments]
    parts += image_file_parts(images, attachments, attachment_limits(settings))
    if text.strip():
        parts.append({"type": "text", "text": text})
    if not parts:
        raise InvalidInputError("an empty message cannot be sent")
    return parts


def edited_copy(
    settings: Settings,
    original: Mapping[str, Any],
    edited_id: str,
    new_text: str,
    editor: Author,
) -> dict[str, Any]:
    """A copy of the user message ``original`` with ``new_text``: its files kept, and its
    metadata saying which message it was edited from and who wrote the copy (``editor``)."""
    kept = [p for p in original.get("parts") or [] if p.get("type") != "text"]
    metadata = original.get("metadata")
    return {
        "id": edited_id,
        "role": "user",
        "parts": user_parts(settings, new_text, (), kept),
        "metadata": {
            **(metadata if isinstance(metadata, dict) else {}),
            "editedFrom": original["id"],
            AUTHOR_KEY: editor.as_metadata(),
        },
    }
