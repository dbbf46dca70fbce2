"""Running a package's suite on both storage engines.

A test that asks for the ``storage`` fixture (directly, or through a package's autouse
fixture) runs once per engine: ``"sqlite"`` (files under the test's data folder) and a
PostgreSQL location of its own (an empty namespace on the tests' server). ``--storage=sqlite``
or ``--storage=postgresql`` (or ``CHATS_TEST_STORAGE``) keeps one; a test about SQLite files
themselves is marked ``sqlite_only`` and runs on SQLite alone.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from backend.config import PostgresLocation, StorageChoice
from backend.data_folder import DIRECTORY_FILE
from backend.storage import Database, Scope
from backend.storage.engines import PostgresStorage

ENGINES = ("sqlite", "postgresql")


def selected_engines(option: str, sqlite_only: bool) -> list[str]:
    """The engines a test runs on: ``option`` is ``both`` or one engine's name."""
    chosen = list(ENGINES) if option in ("", "both") else [option]
    unknown = set(chosen) - set(ENGINES)
    if unknown:
        raise ValueError(f"--storage must be both, sqlite or postgresql; got {option!r}")
    return [engine for engine in chosen if engine == "sqlite" or not sqlite_only]


def raw_rows(storage: StorageChoice, sqlite_file: Path, sql: str) -> list[tuple[Any, ...]]:
    """Run ``sql`` beside the application, as someone holding the database would: on its own
    connection to the SQLite file, or to the PostgreSQL database. Commits."""
    if isinstance(storage, PostgresLocation):
        import psycopg  # only PostgreSQL runs load it

        with psycopg.connect(storage.url) as conn:
            cursor = conn.execute(sql)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
    with sqlite3.connect(sqlite_file) as conn:
        return conn.execute(sql).fetchall()


def scope_name(sqlite_file: Path) -> str:
    """The PostgreSQL scope holding what SQLite keeps in ``sqlite_file``: its absolute path."""
    return os.path.abspath(os.fspath(sqlite_file))


@contextmanager
def directory_scope(storage: StorageChoice, folder: Path) -> Iterator[Scope]:
    """A person's directory database on ``storage``: the ``directory.sqlite`` file in
    ``folder``, or on PostgreSQL the scope named as that file (:func:`scope_name`)."""
    if not isinstance(storage, PostgresLocation):
        database = Database(folder / DIRECTORY_FILE)
        try:
            yield database
        finally:
            database.close()
        return
    engine = PostgresStorage(storage)
    try:
        scope = engine.open_scope(scope_name(folder / DIRECTORY_FILE))
        try:
            yield scope
        finally:
            scope.close()
    finally:
        engine.close()
