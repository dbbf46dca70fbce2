"""Commit and rollback hooks with savepoint scoping: one definition both engines share.

:class:`backend.storage.Database` (SQLite) and
:class:`backend.storage.postgres.scope.PostgresScope` promise the same thing: ``after_commit``
callbacks run once the outermost transaction commits, ``on_rollback`` callbacks if it rolls
back, and hooks registered inside a savepoint belong to it. That bookkeeping is engine-neutral;
issuing ``SAVEPOINT`` / ``ROLLBACK`` is each engine's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Hook = Callable[[], None]


class TransactionHooks:
    """Mix-in: transaction depth, the hook lists and the savepoints' marks into them.

    The owner sets ``lock`` and calls :meth:`_init_hooks` in its ``__init__``.
    ``after_commit`` / ``on_rollback`` take ``lock``; the ``_`` methods run with it held (the
    owner's transaction object holds it from enter to exit).
    The owner's commit path reads ``_after_commit`` / ``_on_rollback`` directly: it is the hot
    path of a durable append, and an attribute read costs less than a method call.
    """

    lock: threading.RLock

    def _init_hooks(self) -> None:
        self._depth = 0
        # (len(after_commit), len(on_rollback)) when each open savepoint began, innermost last.
        self._savepoint_marks: list[tuple[int, int]] = []
        self._after_commit: list[Hook] = []
        self._on_rollback: list[Hook] = []

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    def after_commit(self, callback: Hook) -> None:
        """Run ``callback`` once the current outermost transaction commits (now if none)."""
        with self.lock:
            if self._depth:
                self._after_commit.append(callback)
                return
        callback()

    def on_rollback(self, callback: Hook) -> None:
        """Run ``callback`` if the current outermost transaction rolls back."""
        with self.lock:
            if self._depth:
                self._on_rollback.append(callback)

    def _mark_savepoint(self) -> None:
        """A savepoint opens: hooks registered from now on are its own."""
        self._savepoint_marks.append((len(self._after_commit), len(self._on_rollback)))

    def _undo_savepoint_hooks(self, marks: tuple[int, int]) -> None:
        """The savepoint that began at ``marks`` rolled back: drop its ``after_commit`` hooks
        and run its ``on_rollback`` hooks."""
        undone = self._on_rollback[marks[1] :]
        del self._after_commit[marks[0] :]
        del self._on_rollback[marks[1] :]
        for callback in undone:
            callback()

    def _take_rollback_hooks(self) -> list[Hook]:
        """The outermost transaction rolls back: forget every hook, return the rollback ones
        for the engine to run once its ``ROLLBACK`` is done."""
        callbacks, self._on_rollback = self._on_rollback, []
        self._after_commit = []
        return callbacks
