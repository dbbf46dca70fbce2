"""The values the sharing service takes and hands out: frozen pydantic models, as in
:mod:`backend.accounts.values`.

A chat is named by :class:`ChatRef` (its owner's id and its id): chat ids are minted per
directory, so the owner's id is part of the name. Timestamps are integer ms. No value carries
a link token's hash; the plain token leaves the service once, in :class:`NewShareLink`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from sqlmodel import SQLModel

from backend.chats import ChatHit
from backend.sharing.roles import ChatRole, MemberRole

SharingChangeKind = Literal[
    "added",  # the person gained the chat
    "role_changed",  # their role in it changed
    "removed",  # the owner took it away
    "left",  # they left it
    "chat_deleted",  # the owner deleted the chat (undo brings it back: chat_restored)
    "chat_restored",
    "chat_ended",  # the chat is gone for good (purged, or its owner's account ended)
    "account_ended",  # the member's own account ended
]
LOST_KINDS: frozenset[SharingChangeKind] = frozenset(
    {"removed", "left", "chat_deleted", "chat_ended", "account_ended"}
)


class _Frozen(SQLModel):
    model_config = ConfigDict(frozen=True)  # type: ignore[assignment]  # SQLModelConfig is a ConfigDict


class ChatRef(_Frozen):
    """One chat of one owner's directory."""

    owner_id: str
    chat_id: str


class Member(_Frozen):
    """One person of a shared chat, as "members of this chat" lists them (owner first)."""

    user_id: str
    username: str
    role: ChatRole
    since: int


class SharedChat(_Frozen):
    """One row of "shared with me"."""

    owner_id: str
    owner_username: str
    chat_id: str
    role: MemberRole
    since: int

    @property
    def chat(self) -> ChatRef:
        return ChatRef(owner_id=self.owner_id, chat_id=self.chat_id)


class SharingChange(_Frozen):
    """One entry of the membership feed: ``user_id`` gained, lost or changed ``chat``.

    ``role`` is the role after the change (None when the person lost the chat)."""

    seq: int
    user_id: str
    owner_id: str
    chat_id: str
    kind: SharingChangeKind
    role: MemberRole | None
    at: int

    @property
    def chat(self) -> ChatRef:
        return ChatRef(owner_id=self.owner_id, chat_id=self.chat_id)

    @property
    def lost(self) -> bool:
        return self.kind in LOST_KINDS


class SharingChanges(_Frozen):
    """What ``Sharing.changes_since`` returns: pass ``cursor`` to the next call."""

    cursor: int
    changes: tuple[SharingChange, ...] = ()
    # True when the reader was so far behind that entries were pruned: re-read every tab.
    gap: bool = False

    @property
    def user_ids(self) -> frozenset[str]:
        """Members whose list of shared chats changed."""
        return frozenset(change.user_id for change in self.changes)

    @property
    def chats(self) -> frozenset[ChatRef]:
        """Chats whose members changed (their owners' member lists need a refresh)."""
        return frozenset(change.chat for change in self.changes)


class SnapshotAttachment(_Frozen):
    """One file of a snapshot message; kept only when the owner chose attachments."""

    name: str
    media_type: str
    data: bytes


class SnapshotMessage(_Frozen):
    """One message of a share link's snapshot, as plain values (no id of the live chat)."""

    author: str  # what the page shows: a username, or the assistant's name
    role: Literal["user", "assistant"]
    text: str
    created_at: int
    attachments: tuple[SnapshotAttachment, ...] = ()


class ShareLink(_Frozen):
    """A live link as its owner lists it (no token: it was shown once, at creation)."""

    id: str
    chat_id: str
    title: str
    created_at: int
    message_count: int
    size_bytes: int
    includes_attachments: bool


class NewShareLink(_Frozen):
    """A new link: ``token`` goes into the URL; only its hash is kept."""

    link: ShareLink
    token: str


class SharedSnapshot(_Frozen):
    """What a link's page shows, and nothing else: the title and the stored messages."""

    title: str
    created_at: int
    messages: tuple[SnapshotMessage, ...]


class SharedBy(_Frozen):
    """Whose shared chat a search hit is in, and the chat's title there (what the hit's row
    shows: "shared by olivia")."""

    owner_id: str
    owner_username: str
    chat_title: str


class MessageHit(ChatHit):
    """One message a person's search found: in one of their own chats (``shared_by`` None),
    or in a chat shared with them (``shared_by`` names its owner; ``chat_id`` is the owner's
    id for it, so the chat is ``ChatRef(shared_by.owner_id, chat_id)``)."""

    shared_by: SharedBy | None = None

    @property
    def chat(self) -> ChatRef | None:
        """The shared chat the hit is in; None for the person's own chat."""
        if self.shared_by is None:
            return None
        return ChatRef(owner_id=self.shared_by.owner_id, chat_id=self.chat_id)
