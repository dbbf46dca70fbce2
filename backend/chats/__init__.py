"""The directory of one user / workspace: chat index, shared memory, cross-chat search.

Modules, one concern each:

* ``chats``         ``Chats``, the directory: composes the parts below, its public surface
* ``lifecycle``     a chat's row through its life: create, rename, delete, restore, generations,
                    archive
* ``archive_policy`` "archive chats untouched for N days": the setting and one pass of it
* ``purge``         the lazy sweep: deleted chats' and superseded generations' files removed
* ``chat_files``    ``Chat`` (one conversation's handle) and the LRU of open chat files
* ``parts``         what those three share: the database, chat and message index, layout
* ``ids``           chat ids: minted here, bound to this directory, safe as file names
* ``layout``        where the files live (``root/<directory_id>/...``)
* ``text``          titles, previews, FTS5 quoting, snippet markers (pure)
* ``values``        the typed values handed out (``ChatSummary``, ``ChatHit``, ...), cursors
* ``events``        directory change events, delivered after commit
* ``chat_records``  SQL of the chat index (one row per chat) and title search
* ``shared``        SQL of shared memory blocks and searchable entries
* ``shared_memory`` shared memory as ``Chats`` offers it: checked input, a transaction, an event
* ``index``         the cross-chat message index: change feeds in, documents out; leases, repair
* ``index_store``   SQL and migrations of the message index tables (documents, leases, search)
* ``lease_holders`` who may be writing a chat: holder names, and whether they are gone
* ``message_search`` the cross-chat message search: the index's tiers, or the fan-out
* ``fanout``        the fan-out search: each chat's own index asked, hits merged by rank
* ``snippets``      bounded-time search snippets
* ``sources``       SQL of where imported chats came from (de-duplication of imports)
* ``imports``       the directory side of an import: one chat per source conversation
* ``fork``          a new chat from the path to one message of another
* ``watch``         other processes' commits turned into directory events
* ``chat_marks``    SQL of pins and temporary chats (columns of the chat index)
* ``pins``          pin and unpin a chat: the sidebar's "Pinned" group
* ``temporary``     temporary chats: in no list or search, gone when no window holds them
* ``marked_chats``  pins and temporary chats, built together over one mark store
"""

from backend.chats.archive_policy import MAX_AUTO_ARCHIVE_DAYS, MIN_AUTO_ARCHIVE_DAYS
from backend.chats.chat_files import Chat
from backend.chats.chats import Chats
from backend.chats.events import (
    ChatArchived,
    ChatCreated,
    ChatDeleted,
    ChatPinned,
    ChatPurged,
    ChatRenamed,
    ChatRestored,
    ChatTurnRecorded,
    ChatUnarchived,
    ChatUnpinned,
    DirectoryChanged,
    DirectoryEvent,
    DirectoryListener,
    SharedContextChanged,
)
from backend.chats.imports import ChatImports, ImportTarget, SourceKey
from backend.chats.lifecycle import TitleGenerator
from backend.chats.shared import MEMORY_LABEL
from backend.chats.text import (
    MAX_PREVIEW_CHARS,
    MAX_TITLE_CHARS,
    SNIPPET_ELLIPSIS,
    SNIPPET_END,
    SNIPPET_START,
    split_snippet,
)
from backend.chats.values import ChatCursor, ChatHit, ChatSummary, IndexRepair

__all__ = [
    "MAX_AUTO_ARCHIVE_DAYS",
    "MAX_PREVIEW_CHARS",
    "MAX_TITLE_CHARS",
    "MEMORY_LABEL",
    "MIN_AUTO_ARCHIVE_DAYS",
    "SNIPPET_ELLIPSIS",
    "SNIPPET_END",
    "SNIPPET_START",
    "Chat",
    "ChatArchived",
    "ChatCreated",
    "ChatCursor",
    "ChatDeleted",
    "ChatHit",
    "ChatImports",
    "ChatPinned",
    "ChatPurged",
    "ChatRenamed",
    "ChatRestored",
    "ChatSummary",
    "ChatTurnRecorded",
    "ChatUnarchived",
    "ChatUnpinned",
    "Chats",
    "DirectoryChanged",
    "DirectoryEvent",
    "DirectoryListener",
    "ImportTarget",
    "IndexRepair",
    "SharedContextChanged",
    "SourceKey",
    "TitleGenerator",
    "split_snippet",
]
