"""A small in-process stand-in for ``backend.chats.Chats``, built on real ``Sessions`` files.

For runtime tests that need to inject directory faults (shared memory unreachable, a search
that throws) without depending on the directory's internals. It implements exactly the
directory methods the runtime calls (:class:`backend.runtime.ports.DirectoryPort`, checked by
mypy below, so the fake cannot drift from the contract). Integration tests use the real
``Chats``.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from pathlib import Path

from backend.chats import ChatHit, ChatSummary
from backend.chats.text import PLACEHOLDER_TITLE
from backend.runtime.ports import ChatPort, DirectoryPort
from backend.sessions import Session, Sessions
from backend.storage import Database


@dataclass
class FakeChat:
    id: str
    sessions: Sessions
    session: Session
    title: str = PLACEHOLDER_TITLE
    preview: str = ""
    archived_at: int | None = None
    generation: int = 1
    has_file: bool = True  # the file is created with the chat

    @property
    def database(self) -> Database:
        return self.sessions.database


@dataclass
class FakeDirectory:
    root: Path
    directory_id: str = "dir-1"
    shared: dict[str, str] = field(default_factory=dict)
    memory_down: bool = False
    search_down: bool = False
    renames: list[tuple[str, str]] = field(default_factory=list)
    turns: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._chats: dict[str, FakeChat] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def create_chat(self, title: str | None = None) -> ChatSummary:
        with self._lock:
            chat_id = f"chat{next(self._ids)}"
            sessions = Sessions(self.root / f"{chat_id}.sqlite")
            self._chats[chat_id] = FakeChat(
                chat_id, sessions, sessions.session(), title or PLACEHOLDER_TITLE
            )
        return self.get_summary(chat_id)

    def get_chat(self, chat_id: str) -> FakeChat:
        with self._lock:
            chat = self._chats.get(chat_id)
        if chat is None:
            raise KeyError(chat_id)
        return chat

    def get_summary(self, chat_id: str) -> ChatSummary:
        chat = self.get_chat(chat_id)
        return ChatSummary(
            id=chat_id,
            title=chat.title,
            created_at=0,
            updated_at=0,
            last_message_preview=chat.preview or None,
            archived_at=chat.archived_at,
        )

    def delete_chat(self, chat_id: str) -> None:
        with self._lock:
            chat = self._chats.pop(chat_id, None)
        if chat is not None:
            chat.sessions.close()

    def archive_chat(self, chat_id: str) -> ChatSummary:
        chat = self.get_chat(chat_id)
        chat.archived_at = chat.archived_at or 1
        return self.get_summary(chat_id)

    def unarchive_chat(self, chat_id: str) -> ChatSummary:
        self.get_chat(chat_id).archived_at = None
        return self.get_summary(chat_id)

    def rename_chat(self, chat_id: str, title: str) -> ChatSummary:
        self.get_chat(chat_id).title = title
        self.renames.append((chat_id, title))
        return self.get_summary(chat_id)

    def record_chat_turn(self, chat_id: str, preview: str) -> ChatSummary:
        self.get_chat(chat_id).preview = preview
        self.turns.append((chat_id, preview))
        return self.get_summary(chat_id)

    def search_messages(self, query: str, *, limit: int = 20) -> list[ChatHit]:
        if self.search_down:
            raise ConnectionError("search index unavailable")
        hits = [
            ChatHit(chat_id=chat.id, message_id=result.id, snippet=result.content, rank=result.rank)
            for chat in list(self._chats.values())
            for result in chat.session.search(query, limit=limit)
        ]
        return sorted(hits, key=lambda h: h.rank)[:limit]

    def get_shared_context(self, label: str) -> str | None:
        if self.memory_down:
            raise ConnectionError("directory unreachable")
        return self.shared.get(label)

    def set_shared_context(self, label: str, content: str) -> None:
        if self.memory_down:
            raise ConnectionError("directory unreachable")
        self.shared[label] = content

    def append_shared_context(self, label: str, delta: str) -> None:
        if self.memory_down:
            raise ConnectionError("directory unreachable")
        self.shared[label] = self.shared.get(label, "") + delta

    def close(self) -> None:
        for chat in self._chats.values():
            chat.sessions.close()


def _implements_the_ports(
    directory: FakeDirectory, chat: FakeChat
) -> tuple[DirectoryPort, ChatPort]:
    """Never called: mypy checks that the fake satisfies the runtime's ports."""
    return directory, chat
