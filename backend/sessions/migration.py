"""A conversation's tables for ``chats migrate``: its message tree, continuation rows,
compactions, per-session config and attachments, copied row for row between engines.

The search index is not copied: FTS5 (SQLite) and the ``session_search`` tables (PostgreSQL)
are built differently, and each engine builds its own from the messages at the first search
(``backend.sessions.search_index``), as for any conversation never searched before.
"""

from __future__ import annotations

from backend.sessions.location import store_class
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, copy_scope

__all__ = ["ATTACHMENTS", "MESSAGES", "REBUILT", "TABLES", "copy_conversation"]

MESSAGES = "session_messages"
ATTACHMENTS = "session_attachment_meta"

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        MESSAGES,
        (
            "session_id",
            "id",
            "seq",
            "parent_id",
            "type",
            "role",
            "content",
            "content_chunks",
            "token_estimate",
            "created_at",
            "content_hash",
        ),
        ("session_id", "id"),
    ),
    CopiedTable(
        "session_message_chunks",
        ("session_id", "id", "idx", "content"),
        ("session_id", "id", "idx"),
    ),
    CopiedTable(
        "session_compactions",
        ("session_id", "id", "seq", "summary", "from_message_id", "to_message_id", "created_at"),
        ("session_id", "id"),
    ),
    CopiedTable("session_config", ("session_id", "key", "value"), ("session_id", "key")),
    CopiedTable(ATTACHMENTS, ("hash", "bytes", "media_type", "chunks"), ("hash",)),
    CopiedTable("session_attachment_chunks", ("hash", "idx", "data"), ("hash", "idx")),
    CopiedTable(
        "session_attachment_refs",
        ("session_id", "message_id", "hash"),
        ("session_id", "message_id", "hash"),
    ),
)

_PG_SEARCH = ("session_search_parts", "session_search", "session_search_scopes")
REBUILT = ("session_fts", *_PG_SEARCH, "session_scopes")
"""Never copied: the search index (each engine's own, built at the first search) and, on
PostgreSQL, the conversation's registration (written by the target's store as it opens)."""


def _prepare(target: Scope) -> object:
    """The conversation's schema (and on PostgreSQL its registration) by the store itself."""
    return store_class(target)(target)


def copy_conversation(source: Scope, target: Scope) -> Copied:
    """Every row of the conversation ``source`` into ``target`` (one transaction)."""
    derived = _PG_SEARCH if target.engine_kind == "postgresql" else ()
    return copy_scope(source, target, TABLES, prepare=_prepare, derived=derived)
