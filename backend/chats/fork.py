"""Fork: a new chat holding the path from the root to one message of another chat.

``fork_chat(chats, chat_id, at_message_id, title=None)`` (``Chats.fork_chat``):

* The path is the visible one (overlay echo rows are not copied); messages keep their ids,
  content and timestamps, and are chained root → ``at_message_id`` in path order, so the
  message forked at is the new chat's active leaf.
* Attachments are shared by content hash, not copied: the new chat's messages keep their
  ``attachment:sha256:<hex>`` pointers and its file holds no payload. The payloads are kept
  once in the directory's shared pool (``backend.chats.attachment_pool``), which the fork
  reads them from: the first fork of an image stores it there once; later forks of it, and
  forks of forks, store nothing. Deleting the source chat leaves the fork's images whole.
* Compactions whose whole range lies on the copied path are copied with their ids, so the
  fork reads exactly as the source did up to that message. One that covers part of the path
  and ends past ``at_message_id`` is not copied: on the fork its range does not exist, and
  the full messages are shown instead (which is what the source shows on that branch too).
* Forking at an overlay (``compaction_<id>``) forks at the last message it summarises.
* The new chat is announced with the directory's normal ``created`` event; its messages are
  written in one transaction, and if that fails the new chat is deleted again.
"""

from __future__ import annotations

import json
from typing import Protocol

from backend.chats.imports import ChatImports, ImportTarget
from backend.chats.text import MAX_TITLE_CHARS, SNIPPET_ELLIPSIS
from backend.chats.values import ChatSummary
from backend.clock import now_ms
from backend.errors import InvalidInputError, NotFoundError
from backend.sessions import (
    COMPACTION_PREFIX,
    AttachmentLoader,
    RowStat,
    Session,
    StoredCompaction,
    StoredEntry,
)
from backend.sessions.search import indexed_text
from backend.storage import Database

FORK_TITLE_PREFIX = "Fork of "


class _ChatLike(Protocol):
    @property
    def session(self) -> Session: ...
    @property
    def database(self) -> Database: ...


class _Directory(Protocol):
    """What a fork needs of ``Chats`` (a protocol: ``chats`` imports this module)."""

    @property
    def imports(self) -> ChatImports: ...
    def get_chat(self, chat_id: str) -> _ChatLike: ...
    def get_summary(self, chat_id: str) -> ChatSummary: ...
    def delete_chat(self, chat_id: str) -> None: ...
    def share_attachments(self, chat_id: str, hashes: set[str], load: AttachmentLoader) -> None: ...


def fork_chat(
    chats: _Directory, chat_id: str, at_message_id: str, title: str | None = None
) -> ChatSummary:
    source_chat = chats.get_chat(chat_id)
    source = source_chat.session
    at_message_id = _real_message_id(source, at_message_id)
    if source.get_message(at_message_id) is None:
        raise NotFoundError("message", at_message_id)
    rows = source.get_history_row_stats(leaf_id=at_message_id)
    on_path = {row.id for row in rows}
    compactions = [
        c
        for c in source.get_compactions()
        if c.from_message_id in on_path and c.to_message_id in on_path
    ]
    leaf = source.get_message(at_message_id) or {}
    if title is None:
        title = _fork_title(chats.get_summary(chat_id).title)
    now = now_ms()
    target = chats.imports.begin(
        None,
        "",
        title=title,
        created_at=now,
        updated_at=now,
        preview=indexed_text(leaf) or None,
    )
    try:
        on_path_rows = _stored_rows(source, on_path)
        hashes = set().union(*(entry.attachments for entry in on_path_rows.values()))
        chats.share_attachments(target.chat.id, hashes, source.load_attachments)
        _copy(on_path_rows, chats.get_chat(target.chat.id), rows, compactions)
    except BaseException:
        chats.delete_chat(target.chat.id)
        raise
    chats.imports.finish(None, ImportTarget(target.chat, "new"), updated_at=now, preview=None)
    return target.chat


def _stored_rows(source: Session, ids: set[str]) -> dict[str, StoredEntry]:
    """The rows ``ids`` in stored form: attachments as pointers, never their bytes."""
    return {entry.id: entry for entry in source.stored_tree() if entry.id in ids}


def _copy(
    stored: dict[str, StoredEntry],
    chat: _ChatLike,
    rows: list[RowStat],
    compactions: list[StoredCompaction],
) -> None:
    parent_id: str | None = None
    target = chat.session
    with chat.database.transaction():  # the whole copy lands, or none of it
        for row in rows:
            entry = stored.get(row.id)
            if entry is None:  # deleted meanwhile: its child hangs on the one before
                continue
            # The stored form: pointers stay pointers (the file references the payloads, the
            # shared pool holds them), so no byte of an attachment is written here.
            message = json.loads(entry.content)
            target.import_message(message, parent_id=parent_id, created_at=row.created_at)
            parent_id = row.id
        for compaction in compactions:
            target.import_compaction(compaction)


def _real_message_id(session: Session, message_id: str) -> str:
    if not isinstance(message_id, str) or not message_id:
        raise InvalidInputError("a fork is made at a message id (a non-empty string)")
    if message_id.startswith(COMPACTION_PREFIX):
        record_id = message_id[len(COMPACTION_PREFIX) :]
        for compaction in session.get_compactions():
            if compaction.id == record_id:
                return compaction.to_message_id
    return message_id


def _fork_title(title: str) -> str:
    title = FORK_TITLE_PREFIX + title
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1].rstrip() + SNIPPET_ELLIPSIS
    return title
