"""A person's directory for ``chats migrate``: what is copied, and what each engine rebuilds.

Copied row for row (:mod:`backend.storage.migration`): the directory's meta (its id key, from
which chat ids are minted, and the person's settings), the chat index's rows (deleted,
archived and purged chats too, with their generations), shared memory blocks, the attachment
pool, and import sources (so a second import of the same file still finds its chats).

Written through the stores' own code, because each engine keeps them differently:

* title search (FTS5 on SQLite, ``tsvector`` rows on PostgreSQL): each unpurged chat's title
  is indexed by the target's record store, as a rename would;
* searchable shared-memory entries: their text lives in the search table itself, so each is
  written by the target's ``SharedContextStore.index`` (its time kept, in document order);
* the cross-chat message index is not copied: every unpurged chat is leased to
  ``REBUILD_HOLDER``, a holder that is always gone, so the first ``Chats`` opened on the
  directory rebuilds each chat's documents from its conversation (``backend.chats.index``,
  the path a crash takes);
* on PostgreSQL, which chat generations have storage (``chat_storage``, a file's existence on
  SQLite) is noted by the target's own ``PgChatFiles.opening``.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.chats.attachment_pool import AttachmentPool
from backend.chats.chat_records import ID_KEY, ChatRecordStore
from backend.chats.directory_storage import chat_files_for, record_store_for, twin_of
from backend.chats.index_store import MessageIndexStore
from backend.chats.layout import DirectoryLayout
from backend.chats.lease_holders import REBUILD_HOLDER
from backend.chats.shared import SharedContextStore
from backend.chats.sources import SourceStore
from backend.data_folder import DIRECTORY_FILE
from backend.storage import Scope
from backend.storage.migration import (
    Copied,
    CopiedTable,
    clear_rows,
    copy_tables,
    scope_name_of,
)

__all__ = [
    "POOL",
    "REBUILT",
    "TABLES",
    "copy_directory",
    "directories_under",
    "holds_directories",
    "stored_generations",
]

POOL = "pool_attachments"

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable("directory_meta", ("key", "value"), ("key",)),
    CopiedTable(
        "chats",
        (
            "num",
            "id",
            "title",
            "created_at",
            "updated_at",
            "last_message_preview",
            "generation",
            "deleted_at",
            "purged_at",
            "archived_at",
            "unarchived_at",
            "pinned_at",
            "temporary_expires_at",
            "temporary_held_until",
        ),
        ("num",),
    ),
    CopiedTable("shared_context", ("label", "content", "updated_at"), ("label",)),
    CopiedTable(POOL, ("hash", "bytes", "media_type", "chunks"), ("hash",)),
    CopiedTable("pool_attachment_chunks", ("hash", "idx", "data"), ("hash", "idx")),
    CopiedTable("pool_references", ("num", "hash"), ("num", "hash")),
    CopiedTable(
        "chat_sources",
        ("format", "source_id", "num", "digest", "complete", "imported_at"),
        ("format", "source_id"),
        flags=("complete",),
    ),
)

REBUILT = (
    "chat_titles",
    "message_fts_parts",
    "message_fts",
    "message_docs",
    "index_leases",
    "shared_entries_fts_parts",
    "shared_entries",
    "shared_entries_fts",
    "chat_storage",
)
"""Tables the target's own code writes (see the module docstring): never copied; on
PostgreSQL, which keeps every directory in one set of tables, cleared before a copy so a
redone directory starts from nothing."""
_UNPURGED = "SELECT num, title FROM chats{where} purged_at IS NULL ORDER BY num"
_ENTRIES = {
    "sqlite": (
        "SELECT e.label, e.key, f.content, e.updated_at FROM shared_entries e "
        "JOIN shared_entries_fts f ON f.rowid = e.doc ORDER BY e.doc"
    ),
    "postgresql": (
        "SELECT e.label, e.key, f.content, e.updated_at FROM shared_entries e "
        "JOIN shared_entries_fts f ON f.scope = e.scope AND f.doc = e.doc "
        "WHERE e.scope = ? ORDER BY e.doc"
    ),
}
_DIRECTORY_SCOPES = "SELECT scope FROM directory_meta WHERE key = ? ORDER BY scope"


def _key(scope: Scope) -> tuple[str, ...]:
    return (scope_name_of(scope),) if scope.engine_kind == "postgresql" else ()


def _stores(target: Scope) -> tuple[ChatRecordStore, SharedContextStore, MessageIndexStore]:
    """The directory's schema on ``target``, made by each store as ``Chats`` opens them."""
    records = record_store_for(target)
    shared = twin_of(SharedContextStore, target)(target)
    index = twin_of(MessageIndexStore, target)(target)
    twin_of(AttachmentPool, target)(target)
    twin_of(SourceStore, target)(target)
    return records, shared, index


def copy_directory(
    source: Scope, target: Scope, layout: DirectoryLayout, generations: Sequence[tuple[str, int]]
) -> Copied:
    """The directory ``source`` into ``target`` (one transaction on ``target``).

    ``layout`` names the target's chats; ``generations`` are the chat generations with
    storage on the source, each noted on the target (PostgreSQL) before its chat is copied.
    """
    records, shared, index = _stores(target)
    files = chat_files_for(target, layout)
    with target.transaction():
        if target.engine_kind == "postgresql":
            for name in REBUILT:
                clear_rows(target, name)
        copied = copy_tables(source, target, TABLES)
        where = " WHERE scope = ? AND" if target.engine_kind == "postgresql" else " WHERE"
        for row in target.query(_UNPURGED.format(where=where), _key(target)):
            records._insert_title(int(row[0]), str(row[1]))
            index.acquire(int(row[0]), REBUILD_HOLDER, 0)
        for row in source.query(_ENTRIES[source.engine_kind], _key(source)):
            shared.index(str(row[0]), str(row[1]), str(row[2]), int(row[3]))
            copied.per_table["shared_entries"] = copied.count("shared_entries") + 1
        for chat_id, generation in generations:
            files.opening(chat_id, generation)
    return copied


def stored_generations(source: Scope, layout: DirectoryLayout) -> list[tuple[str, int]]:
    """``(chat_id, generation)`` of every chat generation with storage on the source."""
    return chat_files_for(source, layout).stored()


def directories_under(scope: Scope, root: str) -> list[str]:
    """The directory ids PostgreSQL holds under the logical ``root`` (any scope of that
    database answers: the directory tables hold every directory's rows)."""
    if not holds_directories(scope):
        return []
    prefix, suffix = root.rstrip("/") + "/", "/" + DIRECTORY_FILE
    found = []
    for row in scope.query(_DIRECTORY_SCOPES, (ID_KEY,)):
        name = str(row[0])
        if name.startswith(prefix) and name.endswith(suffix):
            directory_id = name[len(prefix) : -len(suffix)]
            if directory_id and "/" not in directory_id:
                found.append(directory_id)
    return found


def holds_directories(scope: Scope) -> bool:
    """Whether the PostgreSQL database of ``scope`` holds any directory."""
    row = scope.query_one("SELECT to_regclass(?) IS NOT NULL", ("directory_meta",))
    return bool(row and row[0]) and (
        scope.query_one("SELECT 1 FROM directory_meta LIMIT 1") is not None
    )
