"""Pinned chats: pin and unpin from a chat's menu, the CLI or an import; the "Pinned" group.

A pin is a mark on a live chat (``chats.pinned_at``, :mod:`backend.chats.chat_marks`), set and
cleared in one directory transaction and announced after commit as ``pinned`` / ``unpinned``,
so every tab of the person re-reads its sidebar as it does after a rename; another process's
pin reaches them as a ``changed`` event (:mod:`backend.chats.watch`). Both are idempotent:
only a change is announced. A temporary chat cannot be pinned (it is in no list).
"""

from __future__ import annotations

from collections.abc import Callable

from backend.chats.chat_marks import ChatMarkStore
from backend.chats.chat_records import ChatRecord
from backend.chats.events import ChatPinned, ChatUnpinned, DirectoryEvent
from backend.chats.values import ChatSummary
from backend.errors import InvalidInputError
from backend.storage import Scope

MAX_PINNED = 100
"""The "Pinned" group lists at most this many (newest pin first)."""


class ChatPins:
    """Pin and unpin chats of one directory (see the module docstring)."""

    def __init__(
        self,
        database: Scope,
        marks: ChatMarkStore,
        *,
        directory_id: str,
        load_live: Callable[[str], ChatRecord],
        emit_after_commit: Callable[[DirectoryEvent], None],
        clock: Callable[[], int],
    ) -> None:
        self._database = database
        self._marks = marks
        self._directory_id = directory_id
        self._load_live = load_live
        self._emit_after_commit = emit_after_commit
        self._clock = clock

    def pin(self, chat_id: str, *, at: int | None = None) -> ChatSummary:
        """Pin a live chat (``at``: when, for an import; default now); idempotent."""
        with self._database.transaction():
            record = self._load_live(chat_id)
            if record.temporary:
                raise InvalidInputError("a temporary chat cannot be pinned")
            when = self._clock() if at is None else at
            if not self._marks.pin(record, when):
                return record.summary()
            summary = self._load_live(chat_id).summary()
            self._emit_after_commit(ChatPinned(self._directory_id, summary))
        return summary

    def unpin(self, chat_id: str) -> ChatSummary:
        """Unpin a live chat; idempotent."""
        with self._database.transaction():
            record = self._load_live(chat_id)
            if not self._marks.unpin(record):
                return record.summary()
            summary = self._load_live(chat_id).summary()
            self._emit_after_commit(ChatUnpinned(self._directory_id, summary))
        return summary

    def pinned(self, limit: int = MAX_PINNED) -> list[ChatSummary]:
        """The "Pinned" group: live, unarchived pinned chats, newest pin first."""
        return self._marks.pinned(limit)
