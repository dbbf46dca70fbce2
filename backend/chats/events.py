"""Directory change events and their delivery.

Events are small frozen values with a ``type`` string, delivered to every listener **after
the write commits** (via ``Database.after_commit``), so a UI that broadcasts them to every tab
never shows a change that rolled back. Listeners run in subscription order on the writing
thread; a listener that raises is logged and skipped, never undoing or failing the committed
write (the same rule as the ``backend.sessions`` change feed).

=======================  ===========================================================
type                     meaning
=======================  ===========================================================
``created``              a chat was created (or an id re-created): ``chat``
``renamed``              ``chat`` has a new title
``deleted``              ``chat_id`` was soft-deleted: drop it from lists, close its tab
``restored``             a soft-deleted chat is back: ``chat``
``purged``               ``chat_id``'s undo window ended (or a temporary chat expired): its
                         files are gone, nothing brings it back (shared chats end)
``turn_recorded``        a reply finished: ``chat`` has a new preview and ``updated_at``
``archived``             ``chat`` left the main list for the archived one (by hand, or
                         by the "untouched for N days" policy)
``unarchived``           ``chat`` is back in the main list
``pinned``               ``chat`` was pinned (the sidebar's "Pinned" group)
``unpinned``             ``chat`` is no longer pinned
``shared_context``       shared memory ``label`` changed: ``kind`` is ``set``, ``append``
                         (``content`` = the whole block now) or ``index`` (``key``,
                         ``content`` = the entry)
``changed``              another process changed the directory in a way not told by
                         the events above (a rename, shared memory, an import's update):
                         reload lists and memory
=======================  ===========================================================

Changes made by **another process** (the ``chats`` CLI, another app worker) reach this
process's listeners too while anyone is subscribed (``backend.chats.watch``): as ``created``,
``deleted`` and ``turn_recorded`` where the rows say so, else as one ``changed``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Literal

from backend.chats.values import ChatSummary

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _RowEvent:
    """An event that carries the chat's row as it is after the change."""

    directory_id: str
    chat: ChatSummary

    @property
    def chat_id(self) -> str:
        return self.chat.id


@dataclass(frozen=True, slots=True)
class ChatCreated(_RowEvent):
    type: ClassVar[str] = "created"


@dataclass(frozen=True, slots=True)
class ChatRenamed(_RowEvent):
    type: ClassVar[str] = "renamed"


@dataclass(frozen=True, slots=True)
class ChatDeleted:
    type: ClassVar[str] = "deleted"
    directory_id: str
    chat_id: str


@dataclass(frozen=True, slots=True)
class ChatPurged:
    type: ClassVar[str] = "purged"
    directory_id: str
    chat_id: str


@dataclass(frozen=True, slots=True)
class ChatRestored(_RowEvent):
    type: ClassVar[str] = "restored"


@dataclass(frozen=True, slots=True)
class ChatTurnRecorded(_RowEvent):
    type: ClassVar[str] = "turn_recorded"


@dataclass(frozen=True, slots=True)
class ChatArchived(_RowEvent):
    type: ClassVar[str] = "archived"


@dataclass(frozen=True, slots=True)
class ChatUnarchived(_RowEvent):
    type: ClassVar[str] = "unarchived"


@dataclass(frozen=True, slots=True)
class ChatPinned(_RowEvent):
    type: ClassVar[str] = "pinned"


@dataclass(frozen=True, slots=True)
class ChatUnpinned(_RowEvent):
    type: ClassVar[str] = "unpinned"


@dataclass(frozen=True, slots=True)
class SharedContextChanged:
    type: ClassVar[str] = "shared_context"
    directory_id: str
    label: str
    kind: Literal["set", "append", "index"]
    content: str
    key: str | None = None


@dataclass(frozen=True, slots=True)
class DirectoryChanged:
    type: ClassVar[str] = "changed"
    directory_id: str


DirectoryEvent = (
    ChatCreated
    | ChatRenamed
    | ChatDeleted
    | ChatPurged
    | ChatRestored
    | ChatTurnRecorded
    | ChatArchived
    | ChatUnarchived
    | ChatPinned
    | ChatUnpinned
    | SharedContextChanged
    | DirectoryChanged
)
DirectoryListener = Callable[[DirectoryEvent], object]


class EventBus:
    """Ordered listeners; ``subscribe`` returns an idempotent unsubscribe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[DirectoryListener] = []
        # Called outside the lock when the first listener arrives / the last one leaves (the
        # directory starts and stops its cross-process watcher there).
        self.on_first: Callable[[], None] | None = None
        self.on_last: Callable[[], None] | None = None

    @property
    def has_listeners(self) -> bool:
        return bool(self._listeners)

    def subscribe(self, listener: DirectoryListener) -> Callable[[], None]:
        if not callable(listener):
            raise TypeError("listener must be callable")
        with self._lock:
            self._listeners.append(listener)
            first = len(self._listeners) == 1
        if first and self.on_first is not None:
            self.on_first()

        def unsubscribe() -> None:
            with self._lock:
                if listener not in self._listeners:
                    return
                self._listeners.remove(listener)
                last = not self._listeners
            if last and self.on_last is not None:
                self.on_last()

        return unsubscribe

    def emit(self, event: DirectoryEvent) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # a committed write never fails because of a listener
                logger.warning("directory listener failed on %s event", event.type, exc_info=True)
