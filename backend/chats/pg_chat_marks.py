"""Pins and temporary chats on PostgreSQL: the twin of :mod:`backend.chats.chat_marks`.

The columns are the chat index's (``_m002_pins_and_temporary`` of
:mod:`backend.chats.pg_chat_records`); every statement takes the directory's scope first.
"""

from __future__ import annotations

from backend.chats.chat_marks import ChatMarkStore
from backend.chats.chat_records import RECORD_COLUMNS, SUMMARY_COLUMNS
from backend.chats.pg_chat_records import scoped_update
from backend.storage.postgres import PostgresScope


class PgChatMarkStore(ChatMarkStore):
    """The pin and temporary columns' SQL on a PostgreSQL scope."""

    PIN = scoped_update("pinned_at = ?", "c.num = ? AND c.pinned_at IS NULL")
    UNPIN = scoped_update("pinned_at = NULL", "c.num = ? AND c.pinned_at IS NOT NULL")
    LIST_PINNED = (
        f"SELECT {SUMMARY_COLUMNS} FROM chats c WHERE c.scope = ? AND c.deleted_at IS NULL "
        "AND c.pinned_at IS NOT NULL AND c.archived_at IS NULL "
        "AND c.temporary_expires_at IS NULL ORDER BY c.pinned_at DESC, c.id DESC LIMIT ?"
    )
    MAKE_TEMPORARY = scoped_update(
        "temporary_expires_at = ?, temporary_held_until = ?", "c.num = ?"
    )
    HOLD = scoped_update(
        "temporary_held_until = ?",
        "c.id = ? AND c.deleted_at IS NULL AND c.temporary_expires_at IS NOT NULL "
        "AND c.temporary_held_until < ?",
    )
    DUE = (
        f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.scope = ? AND c.deleted_at IS NULL "
        "AND c.temporary_expires_at IS NOT NULL "
        "AND (c.temporary_expires_at <= ? OR c.temporary_held_until <= ?) "
        "ORDER BY c.temporary_expires_at LIMIT ?"
    )
    COUNT_TEMPORARY = (
        "SELECT count(*) FROM chats WHERE scope = ? AND deleted_at IS NULL "
        "AND temporary_expires_at IS NOT NULL"
    )

    def __init__(self, db: PostgresScope) -> None:
        super().__init__(db)
        self._key = (db.name,)
