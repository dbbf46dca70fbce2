"""A chat's scope on either engine, for tests of the stores that live in it.

By the lead's rule (notes: PostgreSQL decisions, 1), what SQLite keeps in file ``F`` lives on
PostgreSQL in the scope named ``os.path.abspath(F)``: the same path names the same data on
both engines, and nothing is created on disk in PostgreSQL mode.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from backend.config import PostgresLocation, StorageChoice
from backend.storage import Database, Scope
from backend.storage.engines import PostgresStorage


def scope_name(file: Path) -> str:
    """The PostgreSQL scope that holds what SQLite keeps in ``file``."""
    return os.path.abspath(os.fspath(file))


@contextmanager
def file_scope(storage: StorageChoice, file: Path) -> Iterator[Scope]:
    """``file`` as a SQLite database, or the PostgreSQL scope it names; closed at the end."""
    with ExitStack() as stack:
        if isinstance(storage, PostgresLocation):
            engine = PostgresStorage(storage)
            stack.callback(engine.close)
            scope = engine.open_scope(scope_name(file))
        else:
            scope = Database(file)
        stack.callback(scope.close)
        yield scope
