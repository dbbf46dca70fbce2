"""The conversation message store: one SQLite file, tree-structured messages, streamed reads.

Module map (one concern each; only ``store`` runs SQL):

    sessions     Sessions: the file, cached handles, the change feed
    handle       Session: every public read and write of one conversation
    store        SessionStore: all SQL, the tail and token caches
    feed         ChangeFeed: ordered after-commit delivery of events
    events       change event dataclasses
    records      result values (AppendResult, RowStat, ...) and OMITTED
    encoding     a message's stored form (digest, slices, estimate, payloads)
    sanitize     validation, provider-field removal, reserved metadata, JSON
    chunking     MAX_INLINE_ROW_BYTES and UTF-8-safe slicing
    attachments  inline media ⇄ content-addressed pointers
    overlays     compaction overlay planning
    compaction   create_compact_function and its boundary rules
    search       FTS text, query quoting, FTS row keys
    documents    SearchableDocuments: read API for indexes kept outside the file
    tokens       heuristic token estimates
"""

from backend.sessions.attachments import (
    POINTER_PREFIX,
    Payload,
    extract_attachments,
    find_pointers,
    resolve_attachments,
)
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
from backend.sessions.sessions import Sessions
from backend.sessions.store import MAX_PATH_DEPTH, SCHEMA_VERSION
from backend.sessions.tokens import estimate_message_tokens, estimate_string_tokens

__all__ = [
    "COMPACTION_PREFIX",
    "MAX_INLINE_ROW_BYTES",
    "MAX_PATH_DEPTH",
    "OMITTED",
    "POINTER_PREFIX",
    "SCHEMA_VERSION",
    "AppendEvent",
    "AppendResult",
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
    "is_compaction_message",
    "resolve_attachments",
    "split_content",
]
