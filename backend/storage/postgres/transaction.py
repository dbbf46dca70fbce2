"""What ``PostgresScope.transaction()`` returns: the ``with`` block of a reentrant write
transaction (savepoints inside it), its state kept on the scope, under the scope's lock."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from backend.errors import StorageError

if TYPE_CHECKING:
    from backend.storage.postgres.scope import PostgresScope


class ScopeTransaction:
    """What ``PostgresScope.transaction()`` returns; state lives on the scope, under its lock."""

    __slots__ = ("_scope",)

    def __init__(self, scope: PostgresScope) -> None:
        self._scope = scope

    def __enter__(self) -> PostgresScope:
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
