"""A chat's row through its life: each step one directory transaction, announced after commit.

::

    create_chat ──► live ──delete_chat──► soft-deleted ──(window passes, lazy sweep)──► purged
                     ▲                         │ restore_chat                              │
                     └─────────────────────────┘◄── create_chat(chat_id=...) (generation+1) ┘

* **Soft delete** hides the chat from every list and search in one statement, and leaves its
  file alone: a reply still streaming into it finishes writing (RFC edge case 3). The files are
  removed by a lazy sweep (after create and delete, and on open) once ``soft_delete_window_s``
  has passed, retired first so no handle can still write into them (:mod:`backend.chats.purge`).
* **Generations.** Re-creating an id starts a fresh generation with a fresh file
  (``<id>.g<n>.sqlite``). A load that names a generation (``get_chat(id, generation=g)``,
  ``record_chat_turn(..., generation=g)``) refuses a stale ``g`` with ``ChatNotFoundError``,
  so a client that held the old chat cannot write into the new one (RFC edge case 4).
* **Archive** is a flag on a live chat (``archive`` / ``unarchive``), orthogonal to the
  states above: an archived chat leaves the main list for the archived one, and is still
  opened, answered, searched, deleted and restored like any other (a restore keeps it
  archived). Both are idempotent; only a change is announced.
* **Lazy files.** Creating a chat writes only the directory row (RFC edge case 1): the chat's
  file is created when ``Chat.session`` is first used, and everything that reads chats
  (fan-out, repair, purge) tolerates a row without a file.

Callers (``Chats``) check that the directory is open; this module never does.
"""

from __future__ import annotations

from collections.abc import Callable

from backend.chats.chat_records import ChatRecord
from backend.chats.events import (
    ChatArchived,
    ChatCreated,
    ChatDeleted,
    ChatRenamed,
    ChatRestored,
    ChatTurnRecorded,
    ChatUnarchived,
    DirectoryEvent,
)
from backend.chats.ids import ChatIds
from backend.chats.parts import DirectoryParts
from backend.chats.purge import ChatPurger
from backend.chats.text import clean_preview, clean_title, default_title
from backend.chats.values import ChatSummary
from backend.errors import ChatNotFoundError, ConflictError

TitleGenerator = Callable[[str | None], str]
"""``generate_title(first_message)`` -> title; called with ``None`` when a chat is created."""
Clock = Callable[[], int]


class ChatLifecycle:
    """Creates, edits, deletes and restores chat rows (see the module docstring)."""

    def __init__(
        self,
        parts: DirectoryParts,
        ids: ChatIds,
        purger: ChatPurger,
        *,
        directory_id: str,
        emit_after_commit: Callable[[DirectoryEvent], None],
        generate_title: TitleGenerator | None,
        clock: Clock,
    ) -> None:
        self._database = parts.database
        self._records = parts.records
        self._index = parts.index
        self._ids = ids
        self._purger = purger
        self._directory_id = directory_id
        self._emit_after_commit = emit_after_commit
        self._generate_title = generate_title
        self._clock = clock

    def create(self, title: str | None, chat_id: str | None) -> ChatSummary:
        """A new chat, or a fresh generation of a deleted ``chat_id`` (a live one: conflict)."""
        now = self._clock()
        if title is None:
            title = self._generate_title(None) if self._generate_title else default_title(now)
        title = clean_title(title)
        if chat_id is None:
            record = self.insert_new(title, now)
        else:
            record = self._recreate(self._ids.validate(chat_id), title, now)
        summary = record.summary()
        self._emit_after_commit(ChatCreated(self._directory_id, summary))
        return summary

    def insert_new(self, title: str, now: int) -> ChatRecord:
        """The row of a chat under a freshly minted id (no event: the caller announces it)."""
        while True:
            chat_id = self._ids.mint()
            with self._database.transaction():
                if self._records.load(chat_id) is None:  # 80 random bits: ~never loops
                    return self._records.insert(chat_id, title, now)

    def _recreate(self, chat_id: str, title: str, now: int) -> ChatRecord:
        with self._database.transaction():
            old = self._records.load(chat_id)
            if old is None:
                return self._records.insert(chat_id, title, now)
            if old.live:
                raise ConflictError(f"chat {chat_id!r} already exists")
            self._index.store.drop_chat(old.num)
            self._index.store.release_all(old.num)
            record = self._records.recreate(old, title, now)
        # After the commit: nothing can restore the old generation any more. A crash before
        # this line leaves a stale file that the next open's sweep removes.
        self._purger.remove_files(old)
        return record

    def rename(self, chat_id: str, title: str) -> ChatSummary:
        title = clean_title(title)
        with self._database.transaction():
            record = self.load_live(chat_id)
            if record.title == title:
                return record.summary()
            summary = self._records.rename(record, title).summary()
            self._emit_after_commit(ChatRenamed(self._directory_id, summary))
        return summary

    def delete(self, chat_id: str) -> None:
        """Soft-delete: one statement hides the chat everywhere; idempotent."""
        chat_id = self._ids.validate(chat_id)
        with self._database.transaction():
            record = self._records.load(chat_id)
            if record is not None and self._records.soft_delete(record, self._clock()):
                self._emit_after_commit(ChatDeleted(self._directory_id, chat_id))

    def restore(self, chat_id: str) -> ChatSummary:
        with self._database.transaction():
            record = self.load(chat_id)
            if record.purged_at is not None:
                raise ChatNotFoundError(chat_id)
            if record.live:
                return record.summary()
            summary = self._records.restore(record).summary()
            self._emit_after_commit(ChatRestored(self._directory_id, summary))
        return summary

    def archive(self, chat_id: str, now: int | None = None) -> ChatSummary:
        """Move a live chat to the archived list (``now``: the policy's pass time)."""
        with self._database.transaction():
            record = self.load_live(chat_id)
            archived = self._records.archive(record, self._clock() if now is None else now)
            if archived is None:
                return record.summary()
            summary = archived.summary()
            self._emit_after_commit(ChatArchived(self._directory_id, summary))
        return summary

    def unarchive(self, chat_id: str) -> ChatSummary:
        """Bring an archived chat back to the main list (it counts as touched now)."""
        with self._database.transaction():
            record = self.load_live(chat_id)
            unarchived = self._records.unarchive(record, self._clock())
            if unarchived is None:
                return record.summary()
            summary = unarchived.summary()
            self._emit_after_commit(ChatUnarchived(self._directory_id, summary))
        return summary

    def record_turn(self, chat_id: str, preview: str, generation: int | None) -> ChatSummary:
        preview = clean_preview(preview)
        with self._database.transaction():
            record = self.load_live(chat_id, generation)
            summary = self._records.record_turn(record, preview, self._clock()).summary()
            self._emit_after_commit(ChatTurnRecorded(self._directory_id, summary))
        return summary

    def load(self, chat_id: str) -> ChatRecord:
        """The row of ``chat_id`` in any state; an invalid or unknown id: ``ChatNotFoundError``."""
        record = self._records.load(self._ids.validate(chat_id))
        if record is None:
            raise ChatNotFoundError(chat_id)
        return record

    def load_live(self, chat_id: str, generation: int | None = None) -> ChatRecord:
        """The row of a live chat (of ``generation``, when given), else ``ChatNotFoundError``."""
        record = self.load(chat_id)
        if not record.live or (generation is not None and generation != record.generation):
            raise ChatNotFoundError(chat_id)
        return record
