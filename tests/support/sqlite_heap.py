"""The heap SQLite holds in this process, for tests that pin what a connection keeps.

``sqlite3_memory_used`` of the library the ``sqlite3`` module links (SQLite's own counter of
its allocations: page caches, prepared statements, schemas), read through ``ctypes``. The
app never reads it; tests compare it before and after an operation of one thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sqlite3

sqlite3.connect(":memory:").close()  # the module's library is loaded: the lookup below finds it


def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("sqlite3") or "libsqlite3.so.0"
    library = ctypes.CDLL(name)
    library.sqlite3_memory_used.restype = ctypes.c_int64
    return library


_SQLITE = _library()


def sqlite_heap_bytes() -> int:
    """Bytes SQLite has allocated and not freed, in this process, now."""
    return int(_SQLITE.sqlite3_memory_used())
