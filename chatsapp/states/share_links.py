"""What a share link holds: the branch a tab shows, up to a chosen message, as plain values.

``Sharing.create_link`` stores what it is given as the snapshot (docs/sharing.md, "Share
links"): no id of the chat, no pointer into it. This builds those values from the chat's
stored path, oldest first: who wrote each message (the author recorded with it, else the
owner), its text, when, and its files (kept only if the owner chose to include them).

It also lists the messages the owner may end a link at (:class:`LinkEndTabState`): the
shown branch, newest first, read when the share dialog opens. The dialog's form sends the
chosen id as ``up_to``; nothing chosen means the branch's newest message.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Iterator
from typing import Any

import reflex as rx

from backend.chats import Chat
from backend.errors import ChatsError
from backend.sharing import SnapshotAttachment, SnapshotMessage
from backend.transcript import TranscriptEntry, entry_from_message
from chatsapp.services import offload, services
from chatsapp.states.chat_access import chat_access
from chatsapp.states.conversation import ChatTabState

LINK_PREFIX = "/share/"
"""The share-link page's path (``chatsapp.routes.share_link`` serves it)."""
ASSISTANT_NAME = "Assistant"
MAX_END_CHOICES = 500  # the newest of a long branch; a snapshot holds at most 2,000 anyway
CHOICE_TEXT_CHARS = 60


def link_url(token: str) -> str:
    """The address a share link's token opens (relative to the app's origin)."""
    return f"{LINK_PREFIX}{token}"


def snapshot_of(chat: Chat, leaf_id: str, owner_id: str) -> list[SnapshotMessage]:
    """The chat's path from the root to ``leaf_id`` (the newest leaf when empty) as
    snapshot messages (blocking)."""
    owner_name = _owner_name(owner_id)
    return [
        SnapshotMessage(
            author=ASSISTANT_NAME if entry.role == "assistant" else _author(message, owner_name),
            role="assistant" if entry.role == "assistant" else "user",
            text=entry.text,
            created_at=sent_at,
            attachments=tuple(_attachments(message)),
        )
        for message, entry, sent_at in _path(chat, leaf_id)
    ]


@dataclasses.dataclass(frozen=True)
class LinkEnd:
    """A message a link may end at, as the chooser lists it."""

    id: str = ""
    label: str = ""


def link_ends(chat: Chat, leaf_id: str, owner_id: str) -> list[LinkEnd]:
    """The messages of the path to ``leaf_id`` a link may end at, newest first, each
    labelled by its place, author and first words (blocking)."""
    owner_name = _owner_name(owner_id)
    path = list(_path(chat, leaf_id))
    ends = []
    for number, (message, entry, _) in reversed(list(enumerate(path, start=1))):
        who = ASSISTANT_NAME if entry.role == "assistant" else _author(message, owner_name)
        words = " ".join(entry.text.split())
        if len(words) > CHOICE_TEXT_CHARS:
            words = words[: CHOICE_TEXT_CHARS - 1] + "…"
        newest = "newest · " if number == len(path) else ""
        ends.append(LinkEnd(entry.id, f"{newest}#{number} {who}: {words}"))
        if len(ends) == MAX_END_CHOICES:
            break
    return ends


def _path(chat: Chat, leaf_id: str) -> Iterator[tuple[dict[str, Any], TranscriptEntry, int]]:
    """Each person's message and reply on the path to ``leaf_id``, with when it was sent."""
    reader = chat.reader
    leaf = leaf_id or None
    sent_at = {row.id: row.created_at for row in reader.get_history_row_stats(leaf)}
    for message in reader.history(leaf_id=leaf):
        entry = entry_from_message(message)
        if entry.role in ("user", "assistant") and not entry.is_summary:
            yield message, entry, int(sent_at.get(entry.id, 0) or 0)


def _owner_name(owner_id: str) -> str:
    owner = services().accounts().user(owner_id)
    return owner.username if owner is not None else owner_id


class LinkEndTabState(rx.State):
    """Per tab: the messages of the shown branch a new link may end at (the owner's)."""

    ends: list[LinkEnd] = []

    @rx.event
    async def load(self) -> None:
        """Read when the dialog's link section mounts (the dialog opened); owner only."""
        tab = await self.get_state(ChatTabState)
        try:
            access = await chat_access(tab.active_chat_id, "share")
            chat = await offload(services().directory(access.owner_id).get_chat, access.chat_id)
            self.ends = await offload(link_ends, chat, tab.view_leaf_id, access.owner_id)
        except (ChatsError, KeyError, ValueError):
            self.ends = []  # not the owner's, or gone: the form still makes "newest" links


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
