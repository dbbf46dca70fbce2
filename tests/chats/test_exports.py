"""The public surface of backend.chats is small and explicit."""

import backend.chats
from tests.support.exports import assert_public_surface


def test_backend_chats_exports_exactly_its_public_names():
    assert_public_surface(
        backend.chats,
        {
            "MAX_AUTO_ARCHIVE_DAYS",
            "MEMORY_LABEL",
            "MAX_PREVIEW_CHARS",
            "MAX_TITLE_CHARS",
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
        },
    )
