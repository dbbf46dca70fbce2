"""Many scopes' commit counters in one round trip, for a poller of many scopes.

Every commit to a scope moves its row in ``_scopes`` (this process's commits too), so a
counter that has not moved since the last look says nobody committed in between, and the
scope's own ``data_version()`` need not be asked. A process watching the directories of
everyone online would otherwise ask each one in turn: a round trip per person every poll.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import psycopg
from psycopg_pool import PoolTimeout

from backend.storage.postgres.engine import PostgresEngine
from backend.storage.postgres.scope import PostgresScope

logger = logging.getLogger(__name__)

_SELECT_COUNTERS = "SELECT name, version FROM _scopes WHERE name = ANY(%s)"
# A hint is not worth a wait: a pool with no connection free now is asked again next round.
_HINT_WAIT_S = 0.05


def read_counters(scopes: Sequence[PostgresScope]) -> list[int | None]:
    """Each scope's commit counter, one query per engine; None where it could not be read (a
    closed scope, a database away, a pool with nothing free): the caller asks that scope."""
    counters: list[int | None] = [None] * len(scopes)
    by_engine: dict[int, tuple[PostgresEngine, list[int]]] = {}
    for index, scope in enumerate(scopes):
        if not scope.closed and not scope.engine.closed:
            by_engine.setdefault(id(scope.engine), (scope.engine, []))[1].append(index)
    for engine, indexes in by_engine.values():
        names = sorted({scopes[i].name for i in indexes})
        try:
            conn = engine.connection(timeout=_HINT_WAIT_S)
        except PoolTimeout:
            continue
        try:
            found = {row[0]: int(row[1]) for row in conn.execute(_SELECT_COUNTERS, (names,))}
        except psycopg.Error:
            logger.debug("commit counters unread", exc_info=True)
            continue
        finally:
            engine.pool.putconn(conn)  # a broken one is discarded
        for i in indexes:
            counters[i] = found.get(scopes[i].name)
    return counters
