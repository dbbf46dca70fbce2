"""Which of many scopes anyone committed to, asked at once: the poller's first question.

:func:`commit_counters` gives, for each scope, a number that moves with every commit to it
(anyone's, this process's too), or None when the engine has nothing cheaper than the scope's
own ``data_version()``. SQLite answers that from the file's shared memory, no round trip to
save; PostgreSQL answers every scope of a database in one query
(:mod:`backend.storage.postgres.counters`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from backend.storage.scope import Scope


def commit_counters(scopes: Sequence[Scope]) -> list[int | None]:
    """See the module docstring; never raises (an unread counter is None)."""
    # A PostgreSQL scope exists only once its engine's module is loaded: a SQLite process
    # never imports the driver for this.
    if "backend.storage.postgres" not in sys.modules:
        return [None] * len(scopes)
    from backend.storage.postgres import PostgresScope
    from backend.storage.postgres.counters import read_counters

    on_postgres = {i: scope for i, scope in enumerate(scopes) if isinstance(scope, PostgresScope)}
    counters: list[int | None] = [None] * len(scopes)
    if on_postgres:
        read = read_counters(list(on_postgres.values()))
        for i, counter in zip(on_postgres, read, strict=True):
            counters[i] = counter
    return counters
