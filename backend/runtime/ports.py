"""What the runtime needs from the directory and from one chat: the seam, as Protocols.

The runtime is written against these two interfaces, never against ``backend.chats``
internals: :class:`backend.chats.Chats` satisfies :class:`DirectoryPort` structurally, and so
does the in-process fake of the runtime tests. Both are checked by mypy (below, and in
``tests/support/fake_directory.py``), so a change to either side that breaks the contract
fails the type check, not a test at run time.

Each method listed is one the runtime calls; nothing more (a narrow seam is the point).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from backend.chats import ChatHit, ChatSummary
from backend.sessions import Session
from backend.storage import Database


class ChatPort(Protocol):
    """One live chat: its conversation and the file its runtime tables live in."""

    @property
    def id(self) -> str: ...

    @property
    def generation(self) -> int:
        """Bumped when a chat id is re-created: an open conversation of an older one is stale."""
        ...

    @property
    def session(self) -> Session: ...

    @property
    def database(self) -> Database:
        """The chat file's database, so runtime tables commit with its messages."""
        ...

    @property
    def has_file(self) -> bool:
        """Whether the file exists yet (watching a chat must not create it)."""
        ...


class DirectoryPort(Protocol):
    """The user's directory: chats, titles, previews, archive, message search, shared memory."""

    @property
    def directory_id(self) -> str: ...

    def get_chat(self, chat_id: str) -> ChatPort:
        """The live chat; ``KeyError`` (``ChatNotFoundError``) when unknown or deleted."""
        ...

    def create_chat(self, title: str | None = None) -> ChatSummary: ...

    def delete_chat(self, chat_id: str) -> None: ...

    def get_summary(self, chat_id: str) -> ChatSummary:
        """The chat's row; its ``archived_at`` is the one record of whether it is archived."""
        ...

    def rename_chat(self, chat_id: str, title: str) -> ChatSummary: ...

    def archive_chat(self, chat_id: str) -> ChatSummary: ...

    def unarchive_chat(self, chat_id: str) -> ChatSummary: ...

    def record_chat_turn(self, chat_id: str, preview: str) -> ChatSummary: ...

    def search_messages(self, query: str, *, limit: int = ...) -> list[ChatHit]: ...

    def get_shared_context(self, label: str) -> str | None: ...

    def set_shared_context(self, label: str, content: str) -> None: ...

    def append_shared_context(self, label: str, delta: str) -> None: ...


if TYPE_CHECKING:
    from backend.chats import Chat, Chats

    def _chats_implement_the_ports(chats: Chats, chat: Chat) -> tuple[DirectoryPort, ChatPort]:
        """Never called: mypy checks that the real directory satisfies the ports."""
        return chats, chat
