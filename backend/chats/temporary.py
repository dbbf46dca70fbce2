"""Temporary chats: never listed, searched, remembered from or titled; gone when no window
holds them, or at the latest ``lifetime`` after they started (issue 29).

A temporary chat is an ordinary chat row and file marked by ``temporary_expires_at``
(:mod:`backend.chats.chat_marks`), so it opens, streams, survives a page reload and is
deleted through the one delete path every chat uses. What the mark changes:

* **Never listed or searched.** The chat index leaves it out of every list and title search
  (and the fan-out search, and the archive policy); the cross-chat message index never
  stores its messages (:mod:`backend.chats.index`), so no message search and no retrieval into
  another chat's prompt can find them. An export of every chat leaves it out, and exporting
  it by id is refused (:mod:`backend.portability.export_json`).
* **Never remembered from or titled.** The runtime neither offers the model the ``remember``
  tool nor asks a model for a title in a temporary chat (``backend.runtime``'s
  ``is_temporary`` check). Reading the person's shared memory stays as in any chat: that
  memory is what the person chose to keep, and reading it leaves nothing behind.
* **Held by its windows.** A window (a tab showing it) holds it: every app process renews
  ``temporary_held_until`` to now + ``grace`` while a tab of its own shows the chat
  (``chatsapp.live.temporary_keeper``), at most once per half ``grace``. When the last window
  closes nobody renews it, and the first :meth:`TemporaryChats.expire` after the grace has
  passed deletes it: a reload (or a tab reopened on another app process) within the grace
  keeps it. Whatever happens to the app, it ends at ``temporary_expires_at`` at the latest.
* **Gone means purged.** Expiry soft-deletes the row (``deleted`` event: open tabs show the
  chat gone) and purges its files at once (:meth:`backend.chats.purge.ChatPurger.purge`),
  with no undo window. A backup taken while it lived restores it already due: the first open
  after the restore removes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from backend.chats.chat_marks import ChatMarkStore
from backend.chats.chat_records import ChatRecord, ChatRecordStore
from backend.chats.events import ChatCreated, ChatDeleted, DirectoryEvent
from backend.chats.purge import ChatPurger
from backend.chats.text import clean_title
from backend.chats.values import ChatSummary
from backend.config import DEFAULT_TEMPORARY_CHAT_GRACE_S, DEFAULT_TEMPORARY_CHAT_TTL_S
from backend.storage import Scope

DEFAULT_TEMPORARY_LIFETIME_S = DEFAULT_TEMPORARY_CHAT_TTL_S
"""A temporary chat ends this long after it started, held or not (``CHATS_TEMPORARY_CHAT_TTL_S``).
"""
DEFAULT_TEMPORARY_GRACE_S = DEFAULT_TEMPORARY_CHAT_GRACE_S
"""How long a temporary chat outlives its last window (``CHATS_TEMPORARY_CHAT_GRACE_S``)."""
TEMPORARY_TITLE = "Temporary chat"
EXPIRE_BATCH = 100


class TemporaryChats:
    """Start, hold and expire the temporary chats of one directory (see the module)."""

    def __init__(
        self,
        database: Scope,
        records: ChatRecordStore,
        marks: ChatMarkStore,
        purger: ChatPurger,
        *,
        insert_new: Callable[[str, int], ChatRecord],
        directory_id: str,
        emit_after_commit: Callable[[DirectoryEvent], None],
        clock: Callable[[], int],
        lifetime_s: float = DEFAULT_TEMPORARY_LIFETIME_S,
        grace_s: float = DEFAULT_TEMPORARY_GRACE_S,
    ) -> None:
        if lifetime_s <= 0 or grace_s <= 0:
            raise ValueError("a temporary chat's lifetime and grace must be positive")
        self._database = database
        self._records = records
        self._marks = marks
        self._purger = purger
        self._insert_new = insert_new
        self._directory_id = directory_id
        self._emit_after_commit = emit_after_commit
        self._clock = clock
        self.lifetime_ms = int(lifetime_s * 1000)
        self.grace_ms = int(grace_s * 1000)

    def start(self, title: str | None = None) -> ChatSummary:
        """A new temporary chat, held for ``grace`` (its first window holds it on)."""
        now = self._clock()
        with self._database.transaction():
            record = self._insert_new(clean_title(title or TEMPORARY_TITLE), now)
            self._marks.make_temporary(record, now + self.lifetime_ms, now + self.grace_ms)
            summary = self._load(record.id).summary()
            self._emit_after_commit(ChatCreated(self._directory_id, summary))
        return summary

    def hold(self, chat_ids: Iterable[str]) -> int:
        """Windows show ``chat_ids``: hold those that are temporary for another ``grace``.

        Reads first and writes only a temporary chat held for less than half a grace more,
        so holding ordinary chats (nearly every call) writes nothing and moves no version
        other processes watch. Returns how many were renewed.
        """
        now = self._clock()
        until, renew_before = now + self.grace_ms, now + self.grace_ms // 2
        wanted = [
            record.id
            for record in map(self._records.load, set(chat_ids))
            if record is not None
            and record.live
            and record.temporary
            and (record.temporary_held_until or 0) < renew_before
        ]
        if not wanted:
            return 0
        with self._database.transaction():
            return sum(self._marks.hold(chat_id, until, renew_before) for chat_id in wanted)

    def expire(self, now: int | None = None) -> list[str]:
        """Delete and purge the temporary chats that are due; their ids."""
        now = self._clock() if now is None else now
        gone = []
        for candidate in self._marks.due(now, EXPIRE_BATCH):
            with self._database.transaction():
                record = self._records.load(candidate.id)  # a window may have held it since
                if record is None or not _due(record, now):
                    continue
                if not self._records.soft_delete(record, now):
                    continue
                self._emit_after_commit(ChatDeleted(self._directory_id, record.id))
            if self._purger.purge(record, now):
                gone.append(record.id)
        return gone

    def count(self) -> int:
        """Live temporary chats (an app process checks for them while nobody holds them)."""
        return self._marks.count_temporary()

    def _load(self, chat_id: str) -> ChatRecord:
        record = self._records.load(chat_id)
        assert record is not None, "loaded in the transaction that wrote it"
        return record


def _due(record: ChatRecord, now: int) -> bool:
    if not record.live or record.temporary_expires_at is None:
        return False
    held = record.temporary_held_until
    return record.temporary_expires_at <= now or (held is not None and held <= now)
