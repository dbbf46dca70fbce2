"""Shared chats: members with roles, the change feed of memberships, read-only share links.

``Sharing(settings, accounts)`` opens ``<data_dir>/sharing.sqlite`` (or its PostgreSQL
scope). Read :mod:`backend.sharing.service` for what the UI and runtime call,
:mod:`backend.sharing.roles` for the one table of who may do what, and ``docs/sharing.md``
for the model and its threats.
"""

from backend.data_folder import SHARING_FILE
from backend.sharing.core import AccountDirectory
from backend.sharing.links import MAX_LINK_TOKEN_CHARS
from backend.sharing.roles import (
    ACTS,
    ALLOWED_ACTS,
    CHAT_ROLES,
    MEMBER_ROLES,
    Act,
    ChatRole,
    MemberRole,
    role_allows,
)
from backend.sharing.run_hooks import RunHooks
from backend.sharing.service import Sharing
from backend.sharing.snapshots import MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_MESSAGES
from backend.sharing.values import (
    ChatRef,
    Member,
    MessageHit,
    NewShareLink,
    SharedBy,
    SharedChat,
    SharedSnapshot,
    ShareLink,
    SharingChange,
    SharingChanges,
    SnapshotAttachment,
    SnapshotMessage,
)

__all__ = [
    "ACTS",
    "ALLOWED_ACTS",
    "CHAT_ROLES",
    "MAX_LINK_TOKEN_CHARS",
    "MAX_SNAPSHOT_BYTES",
    "MAX_SNAPSHOT_MESSAGES",
    "MEMBER_ROLES",
    "SHARING_FILE",
    "AccountDirectory",
    "Act",
    "ChatRef",
    "ChatRole",
    "Member",
    "MemberRole",
    "MessageHit",
    "NewShareLink",
    "RunHooks",
    "ShareLink",
    "SharedBy",
    "SharedChat",
    "SharedSnapshot",
    "Sharing",
    "SharingChange",
    "SharingChanges",
    "SnapshotAttachment",
    "SnapshotMessage",
    "role_allows",
]
