"""The sharing tables for ``chats migrate``: memberships, the membership feed, share links
(hashed tokens) and their snapshots, copied row for row between engines."""

from __future__ import annotations

from backend.sharing.core import SCOPE
from backend.sharing.pg_store import PgSharingStore
from backend.sharing.store import SharingStore
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, copy_scope, table_exists

__all__ = ["REBUILT", "SCOPE", "TABLES", "copy_sharing", "holds_sharing"]

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        "share_chats",
        ("owner_id", "chat_id", "owner_context", "deleted_at", "created_at"),
        ("owner_id", "chat_id"),
        per_scope=False,
    ),
    CopiedTable(
        "share_members",
        ("owner_id", "chat_id", "member_id", "role", "since", "updated_at"),
        ("owner_id", "chat_id", "member_id"),
        per_scope=False,
    ),
    CopiedTable(
        "share_events",
        ("seq", "user_id", "owner_id", "chat_id", "kind", "role", "at"),
        ("seq",),
        per_scope=False,
    ),
    CopiedTable(
        "share_links",
        (
            "id",
            "token_hash",
            "owner_id",
            "chat_id",
            "title",
            "created_at",
            "message_count",
            "size_bytes",
            "includes_attachments",
        ),
        ("id",),
        per_scope=False,
    ),
    CopiedTable(
        "share_link_messages",
        ("link_id", "position", "author", "role", "text", "created_at"),
        ("link_id", "position"),
        per_scope=False,
    ),
    CopiedTable(
        "share_link_files",
        ("link_id", "position", "ordinal", "name", "media_type", "data"),
        ("link_id", "position", "ordinal"),
        per_scope=False,
    ),
)

REBUILT = ("share_event_counter",)
"""PostgreSQL numbers the feed from a one-row counter: set to continue after the last copied
entry, never copied."""
_COUNTER = "UPDATE share_event_counter SET last = (SELECT coalesce(max(seq), 0) FROM share_events)"


def _prepare(target: Scope) -> object:
    store = PgSharingStore if target.engine_kind == "postgresql" else SharingStore
    return store(target)


def copy_sharing(source: Scope, target: Scope) -> Copied:
    after = (_COUNTER,) if target.engine_kind == "postgresql" else ()
    return copy_scope(source, target, TABLES, prepare=_prepare, after=after)


def holds_sharing(scope: Scope) -> bool:
    return (
        table_exists(scope, "share_chats")
        and scope.query_one("SELECT 1 FROM share_chats LIMIT 1") is not None
    )
