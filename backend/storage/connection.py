"""Opening one SQLite connection the way every store expects it, and what it may hold.

* **Pragmas.** WAL journal, ``synchronous`` from :mod:`backend.storage.durability` (``NORMAL``
  by default: a committed transaction survives a killed process, only an OS crash or power
  loss can lose the newest commits; ``FULL`` survives those too), ``busy_timeout`` so foreign
  processes on the same file wait instead of failing, foreign keys off (the stores keep their
  own links).
* **Bounded memory.** A person's directory and open chats stay connected while any tab of
  theirs is (hours), so what an idle connection holds is what every online person costs. Its
  page cache is capped at ``PAGE_CACHE_KIB``: SQLite's default, 2 MB, filled up as a person
  chatted (~1.7 MB on the directory and ~1.3 MB on the chat after 2,000 messages). The
  sqlite3 module keeps ``STATEMENT_CACHE_SIZE`` prepared statements, not its default 128: the
  statements a directory runs once at open stayed prepared (~150 KB).
"""

from __future__ import annotations

import sqlite3
import time

from backend.errors import StorageError
from backend.storage.durability import SYNCHRONOUS_PRAGMAS

BUSY_TIMEOUT_MS = 10_000
STATEMENT_CACHE_SIZE = 16
"""Prepared statements kept per connection; an append's or a turn's hot path uses fewer."""
PAGE_CACHE_KIB = 256
"""Page cache per connection (``PRAGMA cache_size``), see "Bounded memory" above."""


def open_connection(target: str, synchronous: str) -> sqlite3.Connection:
    """A connection to ``target`` (a path or ``":memory:"``) with every pragma applied.

    Shared across threads by its owner (which serialises statements); statements begin and
    commit their own transactions. Any failure is a ``StorageError`` and leaves nothing open.
    """
    try:
        conn = sqlite3.connect(
            target,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,  # the owner issues BEGIN/COMMIT itself
            check_same_thread=False,
            cached_statements=STATEMENT_CACHE_SIZE,
        )
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open database {target}: {exc}") from exc
    try:
        conn.row_factory = sqlite3.Row
        _enable_wal(conn)
        for pragma in (
            f"synchronous = {SYNCHRONOUS_PRAGMAS[synchronous]}",
            f"busy_timeout = {BUSY_TIMEOUT_MS}",
            f"cache_size = -{PAGE_CACHE_KIB}",  # negative: a size in KiB, not in pages
            "foreign_keys = OFF",
        ):
            conn.execute(f"PRAGMA {pragma}")
    except sqlite3.Error as exc:
        conn.close()
        raise StorageError(f"cannot open database {target}: {exc}") from exc
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL, retrying while another connection holds the new file's lock.

    SQLite does not call the busy handler for this switch: two connections opening one new
    file at once would otherwise fail with "database is locked".
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
