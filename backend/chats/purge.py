"""The file side of the soft-delete lifecycle: the lazy sweep, and removing a generation's files.

A soft-deleted chat keeps its file until ``soft_delete_window_s`` has passed; the sweep (on
open, create and delete) then marks its row purged and removes its files. Re-creating an id
removes the old generation's files the same way.

Order matters: the row is marked (and its index documents and leases dropped) in one
directory transaction, and the files go only after that commit, so a restore can no longer
win. Each file is first marked retired (``Sessions.retire``), so a handle that any instance
or process still holds refuses writes with ``ChatNotFoundError`` instead of acknowledging
them into a deleted file; this instance's own open entry is closed too. A crash between the
commit and the removal leaves a stale file that the next open removes
(:meth:`ChatPurger.remove_stale_files`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from backend.chats.chat_files import OpenChatFile, OpenChatFiles
from backend.chats.chat_records import ChatRecord
from backend.chats.events import ChatPurged, DirectoryEvent
from backend.chats.parts import DirectoryParts
from backend.errors import StorageError

logger = logging.getLogger(__name__)

SWEEP_BATCH = 100


class ChatPurger:
    """Purges the files of deleted chats and of superseded generations (see the module)."""

    def __init__(
        self,
        parts: DirectoryParts,
        chat_files: OpenChatFiles,
        *,
        window_ms: int,
        directory_id: str,
        emit_after_commit: Callable[[DirectoryEvent], None],
    ) -> None:
        self._parts = parts
        self._open = chat_files
        self._window_ms = window_ms
        self._directory_id = directory_id
        self._emit_after_commit = emit_after_commit

    def sweep(self, now: int) -> list[str]:
        """Purge the files of chats deleted longer than the window before ``now``; their ids."""
        due = self._parts.records.due_for_purge(now - self._window_ms, SWEEP_BATCH)
        return [record.id for record in due if self.purge(record, now)]

    def purge(self, record: ChatRecord, now: int) -> bool:
        """Purge one soft-deleted generation now (the sweep's step; a temporary chat's end);
        False if it was restored or purged meanwhile."""
        with self._parts.database.transaction():
            if not self._parts.records.mark_purged(record, now):
                return False
            self._parts.index.store.drop_chat(record.num)
            self._parts.index.store.release_all(record.num)
            self._parts.pool.drop_chat(record.num)  # a fork's payloads nobody else reads
            # Announced, so what outlives the files hears the chat is gone (a shared chat's
            # members and links end: chatsapp.services).
            self._emit_after_commit(ChatPurged(self._directory_id, record.id))
        self.remove_files(record)  # after the commit: a restore can no longer win
        return True

    def remove_stale_files(self) -> list[Path]:
        """Delete files of purged or superseded generations (left by a crash mid-purge).

        Files of ids this directory has no row for are left alone: they may be someone's
        data under a directory restored from an older backup (RFC edge case 2). On
        PostgreSQL the "files" are the generations the directory noted (``pg_layout``).
        """
        current = {
            chat_id: generation for _, chat_id, generation in self._parts.records.unpurged_chats()
        }
        removed = []
        for chat_id, generation in self._parts.files.stored():
            if self._parts.records.load(chat_id) is None:
                continue
            if current.get(chat_id) != generation:
                self._retire_and_remove(chat_id, generation, None)
                removed.append(self._parts.layout.chat_path(chat_id, generation))
        return removed

    def remove_files(self, record: ChatRecord) -> None:
        """Close any open entry of the record's generation, then delete its files."""
        entry = self._open.take(record.num, record.generation)
        if entry is not None:
            self._parts.index.forget_hints(record.num)
            entry.unsubscribe()
        self._retire_and_remove(record.id, record.generation, entry)

    def _retire_and_remove(self, chat_id: str, generation: int, entry: OpenChatFile | None) -> None:
        """Mark the file retired, so a handle any process still holds refuses writes, then
        delete it. If it cannot be marked (locked for longer than the busy timeout), it stays
        for the next open's ``remove_stale_files``: deleting it unmarked could lose writes."""
        try:
            if entry is not None:
                entry.sessions.retire()
            else:
                self._parts.files.retire(chat_id, generation)
        except StorageError:
            logger.warning("chat %s.g%s: could not retire its file", chat_id, generation)
            return
        finally:
            if entry is not None:
                entry.sessions.close()
        self._parts.files.remove(chat_id, generation)
