"""How hard a commit is pushed to the disk: SQLite's ``synchronous`` level, one per process.

Both levels keep the WAL journal, so readers never block the writer and a killed *process*
loses nothing it committed. They differ on **power loss or an OS crash**:

* ``normal`` (default): the WAL is synced at checkpoints only. The newest commits (those since
  the last checkpoint, at most about a second of writes) can be lost; the file is never
  corrupted and never holds half a transaction.
* ``full``: the WAL is synced at every commit. A commit that returned survives power loss too,
  at the price of one ``fsync`` per transaction (see ``bench/sessions_bench.py``).

The level is a process-wide default (``CHATS_SQLITE_SYNCHRONOUS``, applied once at start by
:func:`apply_storage_settings`: the app's services and the ``chats`` command both call it),
because every store opens its own files and one process should not mix promises. A
:class:`~backend.storage.Database` may still be given a level explicitly (the benchmark
measures both side by side).
"""

from __future__ import annotations

import threading

from backend.config import SQLITE_SYNCHRONOUS_LEVELS, Settings

# Setting value → the PRAGMA value it issues.
SYNCHRONOUS_PRAGMAS = {level: level.upper() for level in SQLITE_SYNCHRONOUS_LEVELS}
DEFAULT_SYNCHRONOUS = SQLITE_SYNCHRONOUS_LEVELS[0]
UNSYNCED = "normal"
"""The level whose commits issue no ``fsync``: what :meth:`Database.derived_transaction`
commits at, whatever the process's level (its rows are rebuilt after any loss)."""

_lock = threading.Lock()
_default = DEFAULT_SYNCHRONOUS


def checked_synchronous(level: str) -> str:
    """``level`` if it is a known level; a clear ``ValueError`` otherwise."""
    if level not in SYNCHRONOUS_PRAGMAS:
        known = ", ".join(SYNCHRONOUS_PRAGMAS)
        raise ValueError(f"synchronous must be one of {known}; got {level!r}")
    return level


def set_default_synchronous(level: str) -> str:
    """Make ``level`` the default of databases opened from now on; returns the previous one."""
    global _default
    checked = checked_synchronous(level)
    with _lock:
        previous, _default = _default, checked
    return previous


def default_synchronous() -> str:
    with _lock:
        return _default


def apply_storage_settings(settings: Settings) -> None:
    """Make ``CHATS_SQLITE_SYNCHRONOUS`` the level of every database opened from now on."""
    set_default_synchronous(settings.sqlite_synchronous)
