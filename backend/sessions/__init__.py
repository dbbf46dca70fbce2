"""The conversation message store: one SQLite file (or PostgreSQL scope), tree-structured
messages, streamed reads.

Module map (one concern each; SQL only in the stores: schema, store, writes, rows, paths,
compaction_store, attachment_store, search_index):

    sessions          Sessions: the file, cached handles, the change feed
    handle            Session: the write pipeline and compaction of one conversation
    reads             SessionReads (Session's base): history, branches, tree, search
    store             SessionStore: composes the stores; tail and token caches, their coherence
    schema            the tables, their migrations, the retired-file mark
    writes            MessageWriter: the statements of every write to message rows
    rows              RowReader: point reads of message rows, reassembled from slices
    paths             PathReader: content-free walks along parent pointers (MAX_PATH_DEPTH)
    compaction_store  CompactionStore: stored overlays, cached per session
    attachment_store  AttachmentStore: content-addressed payloads and their references
    search_index      SearchIndex: the lazily built FTS table and what it can find
    token_memo        the per-leaf token estimate of a branch, extended by appends
    feed              ChangeFeed: ordered after-commit delivery of events
    events            change event dataclasses
    records           result values (AppendResult, RowStat, ...) and OMITTED
    encoding          a message's stored form (digest, slices, estimate, payloads)
    sanitize          validation, provider-field removal, reserved metadata, JSON
    chunking          MAX_INLINE_ROW_BYTES and UTF-8-safe slicing
    attachments       inline media ⇄ content-addressed pointers
    overlays          compaction overlay planning
    compaction        create_compact_function and its boundary rules
    search            FTS text, query quoting, FTS row keys
    documents         SearchableDocuments: read API for indexes kept outside the file
    tokens            heuristic token estimates
    tool_parts        which parts of a message are tool calls, and of which tool
    location          the engine CHATS_STORAGE names; the scope a path names on PostgreSQL
    growth            which slices a growing message keeps (a streamed reply's checkpoints)

PostgreSQL twins (picked by ``location.store_class`` from the scope's engine; every table keyed
by the conversation's scope first, bound by ``pg_scoped.ScopeKeyed``): pg_schema (tables,
retired mark as ``retired_at``, dropping a conversation's rows), pg_files (retire_file and
drop_conversation_rows on a scope), pg_store, pg_rows, pg_writes,
pg_paths, pg_compaction_store, pg_attachment_store, pg_search_index (FTS5 emulated with
fts_tokens, pg_fts, porter, fts_unicode).
"""

from backend.sessions.attachments import (
    POINTER_PREFIX,
    Payload,
    extract_attachments,
    find_pointers,
    gather_payloads,
    payload_slices,
    resolve_attachments,
)
from backend.sessions.attachments import Loader as AttachmentLoader
from backend.sessions.chunking import MAX_INLINE_ROW_BYTES, split_content
from backend.sessions.compaction import CompactionFunction, create_compact_function
from backend.sessions.documents import SearchableDocuments
from backend.sessions.events import (
    AppendEvent,
    ClearEvent,
    CompactEvent,
    CompactionEvent,
    DeleteEvent,
    ImportEvent,
    SessionChangeEvent,
    SessionChangeListener,
    UpdateEvent,
)
from backend.sessions.handle import Session
from backend.sessions.overlays import COMPACTION_PREFIX, is_compaction_message
from backend.sessions.paths import MAX_PATH_DEPTH
from backend.sessions.records import (
    OMITTED,
    AppendResult,
    CompactResult,
    RecentHistory,
    RowStat,
    SearchResult,
    StoredCompaction,
    StoredEntry,
    TreeEntry,
)
from backend.sessions.schema import SCHEMA_VERSION
from backend.sessions.sessions import Sessions
from backend.sessions.tokens import estimate_message_tokens, estimate_string_tokens
from backend.sessions.tool_parts import TOOL_PART_PREFIX, is_tool_part, tool_name, tool_part_type

__all__ = [
    "COMPACTION_PREFIX",
    "MAX_INLINE_ROW_BYTES",
    "MAX_PATH_DEPTH",
    "OMITTED",
    "POINTER_PREFIX",
    "SCHEMA_VERSION",
    "TOOL_PART_PREFIX",
    "AppendEvent",
    "AppendResult",
    "AttachmentLoader",
    "ClearEvent",
    "CompactEvent",
    "CompactResult",
    "CompactionEvent",
    "CompactionFunction",
    "DeleteEvent",
    "ImportEvent",
    "Payload",
    "RecentHistory",
    "RowStat",
    "SearchResult",
    "SearchableDocuments",
    "Session",
    "SessionChangeEvent",
    "SessionChangeListener",
    "Sessions",
    "StoredCompaction",
    "StoredEntry",
    "TreeEntry",
    "UpdateEvent",
    "create_compact_function",
    "estimate_message_tokens",
    "estimate_string_tokens",
    "extract_attachments",
    "find_pointers",
    "gather_payloads",
    "is_compaction_message",
    "is_tool_part",
    "payload_slices",
    "resolve_attachments",
    "split_content",
    "tool_name",
    "tool_part_type",
]
