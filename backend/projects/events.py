"""Project change events: what a tab of the person needs to hear to refresh its projects.

Delivered after commit, in commit order, to the listeners of that directory's projects in
this process: every ``Projects`` opened on one ``Chats`` shares one :class:`ProjectEvents`
(:func:`events_of`), so a change made through another (an import's, the CLI's in-process
tests) reaches the app's listeners too. A listener that raises is logged and never undoes the
committed change. Another process's changes arrive as the directory's own events
(``backend.chats.watch``: ``DirectoryChanged``), which the app answers by re-reading projects.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from backend.chats import Chats

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProjectsChanged:
    directory_id: str
    project_id: str  # "" when a chat left every project
    kind: str  # created, updated, deleted, chat_moved, memory, file_added, file_removed
    chat_id: str = ""  # the chat moved, for chat_moved


ProjectListener = Callable[[ProjectsChanged], None]


class ProjectEvents:
    """The listeners of one ``Projects``; ``subscribe`` returns an idempotent unsubscribe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: tuple[ProjectListener, ...] = ()

    def subscribe(self, listener: ProjectListener) -> Callable[[], None]:
        with self._lock:
            self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe

    def emit(self, event: ProjectsChanged) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:  # a committed change never fails because of a listener
                logger.warning("project listener failed on %s", event.kind, exc_info=True)


_BY_DIRECTORY: weakref.WeakKeyDictionary[Chats, ProjectEvents] = weakref.WeakKeyDictionary()
_BY_DIRECTORY_LOCK = threading.Lock()


def events_of(chats: Chats) -> ProjectEvents:
    """The one set of project listeners of the directory ``chats`` in this process."""
    with _BY_DIRECTORY_LOCK:
        found = _BY_DIRECTORY.get(chats)
        if found is None:
            found = _BY_DIRECTORY[chats] = ProjectEvents()
        return found
