"""What a temporary chat leaves out of a turn: the ``remember`` tool, and a model's title.

A temporary chat (:mod:`backend.chats.temporary`) must leave nothing behind, so the model is
never offered a tool that writes the person's shared memory, and no model is asked for its
title. Reading shared memory and past chats stays as in any chat: that is the person's own
memory, and reading it writes nothing.
"""

from __future__ import annotations

from backend.models import REMEMBER_TOOL
from backend.runtime.ports import DirectoryPort

WRITING_TOOLS = frozenset({REMEMBER_TOOL})
"""Tools that write outside the chat: never offered in a temporary one."""


def is_temporary(directory: DirectoryPort, chat_id: str) -> bool:
    """Whether ``chat_id`` is temporary; a chat whose row cannot be read counts as one (it is
    deleted or going: writing memory or a title for it would outlive it)."""
    try:
        return directory.get_summary(chat_id).expires_at is not None
    except Exception:  # a deleted chat, an unreachable directory: write nothing
        return True
