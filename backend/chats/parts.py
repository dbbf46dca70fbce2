"""What the parts of a ``Chats`` share: the directory's database, its stores, its layout.

``Chats`` builds them once; ``OpenChatFiles``, ``ChatPurger`` and ``ChatLifecycle`` each take this
one value rather than the same four arguments.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend.chats.attachment_pool import AttachmentPool
from backend.chats.chat_records import ChatRecordStore
from backend.chats.index import MessageIndex
from backend.chats.layout import ChatFiles, DirectoryLayout
from backend.storage import Scope


@dataclass(frozen=True, slots=True)
class DirectoryParts:
    database: Scope  # directory.sqlite (or its scope), the connection that writes
    records: ChatRecordStore  # the chat rows
    index: MessageIndex  # the cross-chat message index
    layout: DirectoryLayout  # where the chat files live
    pool: AttachmentPool  # payloads several chats point to (a fork's)
    files: ChatFiles  # which chat generations have storage (files, or rows on PostgreSQL)
