"""What a share link holds: the branch a tab shows, up to a chosen message, as plain values.

``Sharing.create_link`` stores what it is given as the snapshot (docs/sharing.md, "Share
links"): no id of the chat, no pointer into it. This builds those values from the chat's
stored path, oldest first: who wrote each message (the author recorded with it, else the
owner), its text, when, and its files (kept only if the owner chose to include them).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from backend.chats import Chat
from backend.sharing import SnapshotAttachment, SnapshotMessage
from backend.transcript import entry_from_message
from chatsapp.services import services

LINK_PREFIX = "/share/"
"""The share-link page's path (``chatsapp.routes.share_link`` serves it)."""
ASSISTANT_NAME = "Assistant"


def link_url(token: str) -> str:
    """The address a share link's token opens (relative to the app's origin)."""
    return f"{LINK_PREFIX}{token}"


def snapshot_of(chat: Chat, leaf_id: str, owner_id: str) -> list[SnapshotMessage]:
    """The chat's path from the root to ``leaf_id`` (the newest leaf when empty) as
    snapshot messages (blocking)."""
    owner = services().accounts().user(owner_id)
    owner_name = owner.username if owner is not None else owner_id
    reader = chat.reader
    leaf = leaf_id or None
    sent_at = {row.id: row.created_at for row in reader.get_history_row_stats(leaf)}
    messages: list[SnapshotMessage] = []
    for message in reader.history(leaf_id=leaf):
        entry = entry_from_message(message)
        if entry.role not in ("user", "assistant") or entry.is_summary:
            continue
        assistant = entry.role == "assistant"
        messages.append(
            SnapshotMessage(
                author=ASSISTANT_NAME if assistant else _author(message, owner_name),
                role="assistant" if assistant else "user",
                text=entry.text,
                created_at=int(sent_at.get(entry.id, 0) or 0),
                attachments=tuple(_attachments(message)),
            )
        )
    return messages


def _author(message: dict[str, Any], fallback: str) -> str:
    metadata = message.get("metadata")
    author = metadata.get("author") if isinstance(metadata, dict) else None
    name = author.get("name") if isinstance(author, dict) else None
    return name if isinstance(name, str) and name else fallback


def _attachments(message: dict[str, Any]) -> list[SnapshotAttachment]:
    """The message's files as bytes, from their ``data:`` URLs (others are left out)."""
    found = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict) or part.get("type") != "file":
            continue
        url = part.get("url")
        if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
            continue
        header, _, payload = url.partition(";base64,")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            continue
        name = part.get("filename")
        found.append(
            SnapshotAttachment(
                name=name if isinstance(name, str) and name else "file",
                media_type=str(part.get("mediaType") or header.removeprefix("data:")),
                data=data,
            )
        )
    return found
