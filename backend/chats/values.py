"""The typed values the directory hands out: summaries, search hits, cursors, repair reports.

Why SQLModel classes without ``table=True``: they are pydantic models (validated, frozen,
``model_dump()`` for the UI's broadcast) that read like the table rows they come from, and
``sqlmodel`` is the project's declared model library. The SQL itself does not go through
SQLModel/SQLAlchemy on purpose: the directory needs FTS5 virtual tables, ``WITHOUT ROWID``
tables, partial indexes and ``snippet()``/``bm25()``, none of which SQLAlchemy's ORM models,
and every statement must pass through the one :class:`backend.storage.Database` connection
(its lock, its reentrant transactions with after-commit events, its statement accounting). A
second SQLAlchemy connection would bypass all three.

:class:`ChatSummary` is what every tab receives (RFC edge case 20): it holds only what a
sidebar shows. Internal bookkeeping (generation, deletion time, file paths, row numbers)
never leaves :mod:`backend.chats.chat_records`; a test pins the exact field set.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import ConfigDict
from sqlmodel import SQLModel


class ChatCursor(NamedTuple):
    """A tie-stable ``list_chats`` cursor: the ``(updated_at, id)`` of the last row seen."""

    updated_at: int
    id: str


class ChatSummary(SQLModel):
    """One sidebar row. Timestamps are integer milliseconds.

    ``archived_at`` is set while the chat is archived (out of the main list, under
    "Archived"); searches label such a chat by it. ``pinned_at`` is set while it is pinned
    (the sidebar's "Pinned" group, newest pin first). ``expires_at`` is set only on a
    temporary chat: when it disappears at the latest (it is in no list and no search, and
    goes earlier once no window holds it: :mod:`backend.chats.temporary`).
    """

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    created_at: int
    updated_at: int
    last_message_preview: str | None = None
    archived_at: int | None = None
    pinned_at: int | None = None
    expires_at: int | None = None

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    @property
    def pinned(self) -> bool:
        return self.pinned_at is not None

    @property
    def temporary(self) -> bool:
        return self.expires_at is not None

    @property
    def cursor(self) -> ChatCursor:
        """Pass as ``list_chats(before=...)`` to get the rows after this one."""
        return ChatCursor(self.updated_at, self.id)


def as_cursor(before: object) -> int | ChatCursor | None:
    """A ``list_chats(before=...)`` argument as the store takes it: a bare ``updated_at`` (the
    RFC's cursor) or a ``ChatCursor``; ``None`` is the first page."""
    if before is None or isinstance(before, ChatCursor):
        return before
    if isinstance(before, ChatSummary):
        return before.cursor
    if isinstance(before, tuple) and len(before) == 2:
        updated_at, chat_id = before
        if isinstance(updated_at, int) and isinstance(chat_id, str):
            return ChatCursor(updated_at, chat_id)
    if isinstance(before, int) and not isinstance(before, bool):
        return before
    raise TypeError("before must be an updated_at int, a ChatCursor or (updated_at, id)")


class ChatHit(SQLModel):
    """One message found by ``search_messages``.

    ``snippet`` marks matched terms with ``SNIPPET_START`` / ``SNIPPET_END``; ``rank`` is an
    FTS5 bm25 score: lower is better, comparable within one result list.
    """

    model_config = ConfigDict(frozen=True)

    chat_id: str
    message_id: str
    snippet: str
    rank: float


class IndexRepair(SQLModel):
    """What one pass of the message-index repair did (see ``backend.chats.index``)."""

    model_config = ConfigDict(frozen=True)

    chats_checked: int = 0
    documents_added: int = 0
    documents_updated: int = 0
    documents_removed: int = 0
    leases_released: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.documents_added or self.documents_updated or self.documents_removed)
