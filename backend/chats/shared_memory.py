"""The directory's shared memory as ``Chats`` offers it: checked input, one transaction, an event.

The store (:mod:`backend.chats.shared`, or its PostgreSQL twin) runs the SQL; this module
checks labels, keys and contents first, and announces every committed write as a
:class:`~backend.chats.events.SharedContextChanged`, so a memory panel or an agent in
another tab sees the change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from backend.chats.events import DirectoryEvent, SharedContextChanged
from backend.chats.shared import SharedContextStore, check_content, check_label
from backend.storage import Scope


class SharedMemory:
    """Context blocks and searchable entries every chat of one directory can reach."""

    def __init__(
        self,
        database: Scope,
        store: SharedContextStore,
        *,
        directory_id: str,
        emit_after_commit: Callable[[DirectoryEvent], None],
        clock: Callable[[], int],
    ) -> None:
        self._database = database
        self._store = store
        self._directory_id = directory_id
        self._emit_after_commit = emit_after_commit
        self._clock = clock

    def get(self, label: str) -> str | None:
        return self._store.get(check_label(label))

    def list(self) -> list[tuple[str, str]]:
        return self._store.list()

    def set(self, label: str, content: str) -> None:
        label, content = check_label(label), check_content(content)
        with self._database.transaction():
            self._store.set(label, content, self._clock())
            self._announce(label, "set", content)

    def append(self, label: str, delta: str) -> None:
        label, delta = check_label(label), check_content(delta)
        with self._database.transaction():
            content = self._store.append(label, delta, self._clock())
            self._announce(label, "append", content)

    def search(self, label: str, query: str) -> str | None:
        if not isinstance(query, str):
            raise TypeError("query must be a string")
        return self._store.search(check_label(label), query)

    def index(self, label: str, key: str, content: str) -> None:
        label, key = check_label(label), check_label(key, "shared entry key")
        content = check_content(content)
        with self._database.transaction():
            self._store.index(label, key, content, self._clock())
            self._announce(label, "index", content, key)

    def _announce(
        self,
        label: str,
        kind: Literal["set", "append", "index"],
        content: str,
        key: str | None = None,
    ) -> None:
        event = SharedContextChanged(self._directory_id, label, kind, content, key)
        self._emit_after_commit(event)
