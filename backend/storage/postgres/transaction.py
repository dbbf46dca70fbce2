"""What ``PostgresScope.transaction()`` returns: the ``with`` block of a reentrant write
transaction (savepoints inside it), its state kept on the scope, under the scope's lock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from backend.errors import StorageError
from backend.storage.database import OpStats
from backend.storage.hooks import Hook


class TransactionalScope(Protocol):
    """What a transaction block uses of its scope (described here, not imported: the scope
    module imports this one)."""

    lock: threading.RLock
    _depth: int
    _finished: bool
    _begin_pending: bool
    _stats: OpStats
    _savepoint_marks: list[tuple[int, int]]
    _after_commit: list[Hook]
    _on_rollback: list[Hook]

    def _borrowed(self, use: Callable[[Any], Any], sql: str) -> Any: ...
    def _mark_savepoint(self) -> None: ...
    def _begin_outermost(self) -> None: ...
    def _commit(self) -> None: ...
    def _unpin(self) -> None: ...
    def _rollback_savepoint(self, depth: int, marks: tuple[int, int]) -> None: ...
    def _rollback_outermost(self) -> None: ...


S = TypeVar("S", bound=TransactionalScope)


class ScopeTransaction(Generic[S]):
    """What ``PostgresScope.transaction()`` returns; state lives on the scope, under its lock."""

    __slots__ = ("_scope",)

    def __init__(self, scope: S) -> None:
        self._scope = scope

    def __enter__(self) -> S:
        scope = self._scope
        scope.lock.acquire()
        try:
            depth = scope._depth
            if scope._finished:
                raise StorageError("this transaction was committed with its last write")
            if depth:
                sql = f"SAVEPOINT sp_{depth}"
                scope._borrowed(lambda conn: conn.execute(sql), sql)
                scope._mark_savepoint()
            else:
                scope._begin_outermost()
            scope._stats.statements += 1
            scope._depth = depth + 1
        except BaseException:
            scope.lock.release()
            raise
        return scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        scope = self._scope
        callbacks: list[Callable[[], None]] = []
        try:
            depth = scope._depth = scope._depth - 1
            if depth:
                marks = scope._savepoint_marks.pop()
                if exc_type is None:
                    sql = f"RELEASE SAVEPOINT sp_{depth}"
                    scope._borrowed(lambda conn: conn.execute(sql), sql)
                else:
                    scope._rollback_savepoint(depth, marks)
                return
            if scope._finished:  # committed by commit_if_unmoved, whatever came after
                scope._finished = False
            elif exc_type is not None:
                scope._rollback_outermost()
                return
            elif scope._begin_pending:  # no statement ran: nothing began, nothing to commit
                scope._begin_pending = False
            else:
                scope._commit()
            scope._unpin()
            scope._on_rollback = []
            callbacks, scope._after_commit = scope._after_commit, []
        finally:
            scope.lock.release()
        for callback in callbacks:  # outside the lock, as on SQLite
            callback()
