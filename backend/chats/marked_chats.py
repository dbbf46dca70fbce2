"""Pins and temporary chats of one directory, built together over one mark store.

``Chats`` calls :func:`open_marks` once; the two services share the store of their columns
(:mod:`backend.chats.chat_marks`, or its PostgreSQL twin) and the directory's own steps.
"""

from __future__ import annotations

from collections.abc import Callable

from backend.chats.chat_marks import ChatMarkStore
from backend.chats.directory_storage import twin_of
from backend.chats.events import DirectoryEvent
from backend.chats.lifecycle import ChatLifecycle
from backend.chats.parts import DirectoryParts
from backend.chats.pins import ChatPins
from backend.chats.purge import ChatPurger
from backend.chats.temporary import TemporaryChats


def open_marks(
    parts: DirectoryParts,
    lifecycle: ChatLifecycle,
    purger: ChatPurger,
    *,
    directory_id: str,
    emit_after_commit: Callable[[DirectoryEvent], None],
    clock: Callable[[], int],
    lifetime_s: float,
    grace_s: float,
) -> tuple[ChatPins, TemporaryChats]:
    """The directory's pins and temporary chats (the ``Chats.pins`` and ``.temporary``)."""
    marks = twin_of(ChatMarkStore, parts.database)(parts.database)
    pins = ChatPins(
        parts.database,
        marks,
        directory_id=directory_id,
        load_live=lifecycle.load_live,
        emit_after_commit=emit_after_commit,
        clock=clock,
    )
    temporary = TemporaryChats(
        parts.database,
        parts.records,
        marks,
        purger,
        insert_new=lifecycle.insert_new,
        directory_id=directory_id,
        emit_after_commit=emit_after_commit,
        clock=clock,
        lifetime_s=lifetime_s,
        grace_s=grace_s,
    )
    return pins, temporary
