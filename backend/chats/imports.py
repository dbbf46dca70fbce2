"""The directory side of an import: one chat per source conversation, never two.

``ChatImports`` (``Chats.imports``) is what ``backend.portability`` calls around writing one
imported conversation into a chat file::

    target = chats.imports.begin(source, digest, title=..., created_at=..., updated_at=...)
    if target.status != "unchanged":
        ... write messages into chats.get_chat(target.chat.id).session ...
        chats.imports.finish(source, target, updated_at=..., preview=...)

* ``begin`` looks the source up (``backend.chats.sources``). Already imported, complete and
  with the same ``digest``: ``unchanged``, nothing written. Imported before with other
  content: ``update`` (the same chat; the importer adds what is new). Left incomplete by a
  crash: ``resume`` (the same chat). Otherwise, or when the user deleted that chat since:
  ``new``, a chat created with the source's title and times, in the same transaction as its
  source row, announced with the directory's normal ``created`` event (live in every tab).
* ``finish`` marks the source complete and, for an update, moves the chat's ``updated_at``
  and preview to the source's (a ``turn_recorded`` event).

A chat created without a source (``source=None``, e.g. a fork) gets no source row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from backend.chats.chat_records import ChatRecord, ChatRecordStore
from backend.chats.directory_storage import twin_of
from backend.chats.events import ChatCreated, ChatTurnRecorded, DirectoryEvent
from backend.chats.sources import SourceStore
from backend.chats.text import clean_preview, clean_title
from backend.chats.values import ChatSummary
from backend.storage import Scope

ImportStatus = Literal["new", "resume", "update", "unchanged"]


@dataclass(frozen=True, slots=True)
class SourceKey:
    """A conversation of another system: ``format`` (``chatgpt``, ...) and its id there."""

    format: str
    source_id: str


@dataclass(frozen=True, slots=True)
class ImportTarget:
    chat: ChatSummary
    status: ImportStatus


class ChatImports:
    """See the module docstring. One per ``Chats`` (``Chats.imports``)."""

    def __init__(
        self,
        database: Scope,
        records: ChatRecordStore,
        directory_id: str,
        *,
        insert_new: Callable[[str, int], ChatRecord],
        load_live: Callable[[str], ChatRecord],
        emit_after_commit: Callable[[DirectoryEvent], None],
        clock: Callable[[], int],
    ) -> None:
        self._db = database
        self._records = records
        self._directory_id = directory_id
        self._insert_new = insert_new
        self._load_live = load_live
        self._emit_after_commit = emit_after_commit
        self._clock = clock
        self._sources = twin_of(SourceStore, database)(database)

    def source_of(self, chat_id: str) -> SourceKey | None:
        """Where a live chat was imported from, if it was."""
        record = self._load_live(chat_id)
        found = self._sources.source_of(record.num)
        return SourceKey(*found) if found else None

    def begin(
        self,
        source: SourceKey | None,
        digest: str,
        *,
        title: str,
        created_at: int,
        updated_at: int,
        preview: str | None = None,
        archived_at: int | None = None,
    ) -> ImportTarget:
        """Where to write one source conversation; a new chat gets the source's times, preview
        and archive (``archived_at``); a chat imported before keeps its own archive."""
        title = clean_title(title)
        preview = clean_preview(preview) if preview else None
        with self._db.transaction():
            if source is not None:
                row = self._sources.load(source.format, source.source_id)
                record = self._records.load_num(row.num) if row else None
                if row is not None and record is not None and record.live:
                    if row.complete and row.digest == digest:
                        return ImportTarget(record.summary(), "unchanged")
                    status: ImportStatus = "update" if row.complete else "resume"
                    self._sources.begin(
                        source.format, source.source_id, row.num, digest, self._clock()
                    )
                    return ImportTarget(record.summary(), status)
            record = self._insert_new(title, self._clock())
            record = self._records.backdate(record, created_at, updated_at, preview)
            if archived_at is not None:
                record = self._records.archive(record, archived_at) or record
            if source is not None:
                self._sources.begin(
                    source.format, source.source_id, record.num, digest, self._clock()
                )
            summary = record.summary()
            self._emit_after_commit(ChatCreated(self._directory_id, summary))
        return ImportTarget(summary, "new")

    def finish(
        self,
        source: SourceKey | None,
        target: ImportTarget,
        *,
        updated_at: int,
        preview: str | None,
    ) -> None:
        preview = clean_preview(preview) if preview else None
        with self._db.transaction():
            if source is not None:
                self._sources.complete(source.format, source.source_id)
            if target.status != "update":
                return
            record = self._load_live(target.chat.id)
            if record.updated_at >= updated_at and record.last_message_preview == preview:
                return
            record = self._records.backdate(
                record, record.created_at, max(updated_at, record.updated_at), preview
            )
            self._emit_after_commit(ChatTurnRecorded(self._directory_id, record.summary()))
