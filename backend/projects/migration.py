"""A person's projects for ``chats migrate``: rows copied, chunk search written by the target.

Copied row for row (:mod:`backend.storage.migration`), in the directory's unit after its chat
index: projects (name, instructions, memory, times, and ``deleted_at`` of one deleted with its
chats, so its undo still works on the target), chat memberships, files' values, and their
text chunks with their ``doc`` keys (the key a chunk's embedding would take; on PostgreSQL an
identity shared by every directory, moved past the largest copied number afterwards). A
file's bytes were never kept (:mod:`backend.projects.files`): its chunks are what it is.

Not copied: chunk search (FTS5 rows on SQLite, ``tsvector`` parts on PostgreSQL), which each
engine keeps differently; the target's own store indexes every copied chunk, as adding the
file did. There are no meaning vectors of chunks to carry (none are computed yet); when they
are, they are the target's to recompute, as the message index's are.
"""

from __future__ import annotations

from backend.projects.service import store_for
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, clear_rows, copy_tables

__all__ = ["CHUNKS", "REBUILT", "TABLES", "copy_projects"]

CHUNKS = CopiedTable(
    "project_chunks",
    ("doc", "file_id", "project_id", "seq", "text"),
    ("doc",),
    identity="doc",
)
TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        "projects",
        (
            "id",
            "name",
            "instructions",
            "use_personal_memory",
            "memory",
            "created_at",
            "updated_at",
            "deleted_at",
        ),
        ("id",),
    ),
    CopiedTable("project_chats", ("chat_id", "project_id", "added_at"), ("chat_id",)),
    CopiedTable(
        "project_files",
        ("id", "project_id", "name", "media_type", "size", "text_chars", "created_at"),
        ("id",),
    ),
    CHUNKS,
)

REBUILT = ("project_chunks_fts", "project_chunk_parts")
"""Chunk search, SQLite's and PostgreSQL's: written by the target's store, never copied."""
_SEARCH_TABLE = {"sqlite": "project_chunks_fts", "postgresql": "project_chunk_parts"}


def copy_projects(source: Scope, target: Scope) -> Copied:
    """The projects of the directory ``source`` into the directory ``target`` (one
    transaction on ``target``; a rerun clears the directory's rows first)."""
    store = store_for(target)  # the schema, made as ``Projects`` makes it
    with target.transaction():
        clear_rows(target, _SEARCH_TABLE[target.engine_kind])
        copied = copy_tables(source, target, TABLES)  # the chunks' identity moved past
        copied.per_table[_SEARCH_TABLE[target.engine_kind]] = store.index_every_chunk()
    return copied
