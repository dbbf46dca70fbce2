"""Sessions: one conversation database file, its session handles and its change feed.

``Sessions(path)`` opens (or creates) one SQLite file through ``backend.storage.Database`` (WAL,
busy timeout: other processes may open the same file), runs the ``sessions`` migrations and
hands out cached ``Session`` handles, so per-session configuration (``on_compaction``,
``compact_after``) survives repeated ``session()`` calls. With ``CHATS_STORAGE`` naming
PostgreSQL, ``path`` names the conversation's scope there instead and nothing touches the disk
(:mod:`backend.sessions.location`); ``Sessions(scope)`` uses a scope another store opened.

``Sessions.database`` is public on purpose: other stores keep their tables in the same file and
commit their writes atomically with message writes::

    with sessions.database.transaction():
        session.append_message(message)
        other_store.write(...)

Events fire once, after that outer commit; a rollback discards them and the store's caches.

**Retiring a file.** Before deleting a conversation file, its owner calls ``retire()`` (or
``retire_file(path)`` when it has no ``Sessions`` open on it): every ``Sessions`` on that
file, in any process, then refuses writes with ``retired_error`` (by default a
``NotFoundError``) instead of acknowledging writes into a file that is about to vanish. On
PostgreSQL the file is the scope's rows: ``retire_file`` marks them, and
``drop_conversation_rows(path)`` deletes them (what removing the file is on SQLite).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import cast

from backend.sessions.attachments import Loader
from backend.sessions.events import SessionChangeListener
from backend.sessions.feed import ChangeFeed
from backend.sessions.handle import Session
from backend.sessions.location import (
    OpenedConversation,
    configured_storage,
    open_conversation,
    store_class,
)
from backend.sessions.sanitize import check_storable_text
from backend.sessions.schema import mark_retired
from backend.storage import Database, Scope
from backend.storage.closing import Closing


class Sessions(Closing):
    """The conversation store of one SQLite file."""

    def __init__(
        self,
        path: str | Path | Scope,
        *,
        reserved_metadata_keys: tuple[str, ...] | list[str] | frozenset[str] = (),
        retired_error: Callable[[], Exception] | None = None,
        shared_attachments: Loader | None = None,
    ) -> None:
        """``shared_attachments`` loads the payloads a message points to that this file does
        not hold (a fork's, kept once for the owner's chats: ``backend.chats.attachment_pool``).
        """
        if isinstance(reserved_metadata_keys, str):
            raise TypeError("reserved_metadata_keys is a collection of keys, not one string")
        self._opened: OpenedConversation | None = None
        if isinstance(path, str | os.PathLike):
            self._opened = open_conversation(path)
            scope = self._opened.scope
        else:  # a file (or scope) another store already opened
            scope = path
        # Typed ``Database`` for the stores that still take one (the runtime's, the ports):
        # on PostgreSQL it is a ``PostgresScope``, which keeps the same ``Scope`` contract.
        self.database = cast(Database, scope)
        try:
            self._store = store_class(self.database)(
                self.database, retired_error, shared_attachments
            )
        except BaseException:
            self.close()
            raise
        self._feed = ChangeFeed(self.database)
        self._reserved = frozenset(reserved_metadata_keys)
        self._handles: dict[str, Session] = {}
        self._handles_lock = threading.Lock()

    def session(self, session_id: str = "") -> Session:
        """The handle of ``session_id`` ("" is the conversation of a one-chat file)."""
        if not isinstance(session_id, str):
            raise TypeError("session_id is a string")
        check_storable_text(session_id, "session id")
        with self._handles_lock:
            handle = self._handles.get(session_id)
            if handle is None:
                handle = Session(session_id, self._store, self._feed, self._reserved)
                self._handles[session_id] = handle
            return handle

    def subscribe(self, listener: SessionChangeListener) -> Callable[[], None]:
        """Call ``listener(event)`` after every committed change of any session of this file."""
        return self._feed.subscribe(listener)

    def retire(self) -> None:
        """Mark the file retired (see the module docstring); this object refuses writes too."""
        if self.database.engine_kind == "postgresql":
            from backend.sessions import pg_schema

            pg_schema.mark_retired(pg_schema.postgres_scope(self.database))
        else:
            mark_retired(self.database)
        self._store.retired = True

    @staticmethod
    def retire_file(path: str | Path) -> bool:
        """Mark the conversation file at ``path`` retired; False if there is no such file
        (on PostgreSQL: no conversation was ever opened on the scope ``path`` names)."""
        if configured_storage() != "sqlite":
            from backend.sessions.pg_schema import retire_scope

            return retire_scope(path)
        if not Path(path).exists():
            return False
        database = Database(path)
        try:
            mark_retired(database)
        finally:
            database.close()
        return True

    @staticmethod
    def drop_conversation_rows(path: str | Path) -> bool:
        """PostgreSQL: delete every row of the conversation ``path`` names (a chat's purge),
        leaving it retired, so a store still open on it anywhere refuses writes; False if
        there was none. SQLite: nothing to do, False (the owner removes the file itself)."""
        if configured_storage() == "sqlite":
            return False
        from backend.sessions.pg_schema import drop_scope

        return drop_scope(path)

    def close(self) -> None:
        """Close the file (if this object opened it)."""
        if self._opened is not None:
            self._opened.close()
