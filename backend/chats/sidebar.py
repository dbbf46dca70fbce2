"""A person's sidebar page: everything the shared sidebar shows, read in one call.

The sidebar shows the first page of the chat list and, once a tab has opened that section, the
first page of archived chats. Both are read here together, so the live layer makes one
backend call (one thread hop) per refresh, however many lists it refreshes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from backend.chats.values import ChatSummary

SIDEBAR_PAGE = 40
"""Chats on the sidebar's first page (each tab loads further pages on its own)."""
ARCHIVED_PAGE = 50
"""Archived chats the archived section lists."""


class ChatLists(Protocol):
    """The listing ``Chats`` offers (``Chats.list_chats``)."""

    def list_chats(self, *, limit: int | None = ..., archived: bool = ...) -> list[ChatSummary]: ...


class PinnedChats(Protocol):
    """The "Pinned" group ``Chats.pins`` offers."""

    def pinned(self, limit: int = ...) -> list[ChatSummary]: ...


@dataclass(frozen=True, slots=True)
class SidebarPage:
    """The sidebar's first page, newest first; ``archived`` is None when it was not asked for
    (no tab has shown the archived section, or nothing archived changed). ``pinned`` is the
    "Pinned" group above it, newest pin first; ``chats`` holds those too (the list's pages
    stay one cursor's), and the sidebar shows each chat once, in its group."""

    chats: tuple[ChatSummary, ...]
    archived: tuple[ChatSummary, ...] | None = None
    pinned: tuple[ChatSummary, ...] = ()


def read_sidebar_page(lists: ChatLists, pins: PinnedChats, *, with_archived: bool) -> SidebarPage:
    """The pinned chats, the list's first page and, with ``with_archived``, the archived one."""
    pinned = tuple(pins.pinned())
    chats = tuple(lists.list_chats(limit=SIDEBAR_PAGE))
    if not with_archived:
        return SidebarPage(chats, pinned=pinned)
    archived = tuple(lists.list_chats(limit=ARCHIVED_PAGE, archived=True))
    return SidebarPage(chats, archived, pinned)
