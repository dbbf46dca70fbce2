"""Project change events: what a tab of the person needs to hear to refresh its projects.

Delivered after commit, in commit order, to the listeners of the process's ``Projects`` of
that directory; a listener that raises is logged and never undoes the committed change.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

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
