"""Pins and temporary chats as columns of the chat index: their SQL only (issue 29).

The columns live on ``chats`` (migration ``_m004_pins_and_temporary`` of
:mod:`backend.chats.chat_records`, ``_m002_pins_and_temporary`` on PostgreSQL):

* ``pinned_at``: when a live chat was pinned (``NULL``: not pinned). The sidebar's "Pinned"
  group lists pinned chats that are neither archived nor temporary, **newest pin first**: a
  pin stays where it was put, however often its chat is answered. Archiving keeps the pin
  (it shows again once unarchived); a re-created id starts unpinned.
* ``temporary_expires_at``: set on a temporary chat only, when it disappears at the latest;
  ``temporary_held_until``: when it disappears unless a window holds it longer
  (:mod:`backend.chats.temporary` says who holds it and what happens when it is due).

Callers own transactions and events; like the chat index, this never commits on its own.
"""

from __future__ import annotations

from backend.chats.chat_records import (
    RECORD_COLUMNS,
    SUMMARY_COLUMNS,
    ChatRecord,
    record_from_row,
    summary_from_row,
)
from backend.chats.values import ChatSummary
from backend.storage import Scope


class ChatMarkStore:
    """SQL for the pin and temporary columns of ``chats``, on the directory's scope.

    Statements are class attributes: the PostgreSQL twin (:mod:`backend.chats.pg_chat_marks`)
    rewrites them to take the directory's scope first (``_key``, empty here).
    """

    def __init__(self, db: Scope) -> None:
        self.db = db
        self._key: tuple[str, ...] = ()

    # ── pins ────────────────────────────────────────────────────────

    PIN = "UPDATE chats SET pinned_at = ? WHERE num = ? AND pinned_at IS NULL"
    UNPIN = "UPDATE chats SET pinned_at = NULL WHERE num = ? AND pinned_at IS NOT NULL"
    LIST_PINNED = (
        f"SELECT {SUMMARY_COLUMNS} FROM chats c WHERE c.deleted_at IS NULL "
        "AND c.pinned_at IS NOT NULL AND c.archived_at IS NULL "
        "AND c.temporary_expires_at IS NULL ORDER BY c.pinned_at DESC, c.id DESC LIMIT ?"
    )

    def pin(self, record: ChatRecord, now_ms: int) -> bool:
        """Pin ``record`` at ``now_ms``; False if it was pinned already (nothing written)."""
        return self.db.execute(self.PIN, (*self._key, now_ms, record.num)).rowcount == 1

    def unpin(self, record: ChatRecord) -> bool:
        """Unpin ``record``; False if it was not pinned."""
        return self.db.execute(self.UNPIN, (*self._key, record.num)).rowcount == 1

    def pinned(self, limit: int) -> list[ChatSummary]:
        """The "Pinned" group: newest pin first."""
        rows = self.db.query(self.LIST_PINNED, (*self._key, limit))
        return [summary_from_row(row) for row in rows]

    # ── temporary chats ─────────────────────────────────────────────

    MAKE_TEMPORARY = (
        "UPDATE chats SET temporary_expires_at = ?, temporary_held_until = ? WHERE num = ?"
    )
    HOLD = (
        "UPDATE chats SET temporary_held_until = ? WHERE id = ? AND deleted_at IS NULL "
        "AND temporary_expires_at IS NOT NULL AND temporary_held_until < ?"
    )
    DUE = (
        f"SELECT {RECORD_COLUMNS} FROM chats c WHERE c.deleted_at IS NULL "
        "AND c.temporary_expires_at IS NOT NULL "
        "AND (c.temporary_expires_at <= ? OR c.temporary_held_until <= ?) "
        "ORDER BY c.temporary_expires_at LIMIT ?"
    )
    COUNT_TEMPORARY = (
        "SELECT count(*) FROM chats WHERE deleted_at IS NULL AND temporary_expires_at IS NOT NULL"
    )

    def make_temporary(self, record: ChatRecord, expires_at: int, held_until: int) -> None:
        self.db.execute(self.MAKE_TEMPORARY, (*self._key, expires_at, held_until, record.num))

    def hold(self, chat_id: str, until_ms: int, unless_after: int) -> bool:
        """Keep a live temporary chat until ``until_ms``, unless it is held past
        ``unless_after`` already; False for any other chat (nothing written)."""
        params = (*self._key, until_ms, chat_id, unless_after)
        return self.db.execute(self.HOLD, params).rowcount == 1

    def due(self, now_ms: int, limit: int) -> list[ChatRecord]:
        """Live temporary chats past their end or no longer held at ``now_ms``."""
        rows = self.db.query(self.DUE, (*self._key, now_ms, now_ms, limit))
        return [record_from_row(row) for row in rows]

    def count_temporary(self) -> int:
        row = self.db.query_one(self.COUNT_TEMPORARY, self._key)
        return 0 if row is None else int(row[0])
