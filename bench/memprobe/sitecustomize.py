"""A memory probe loaded into every Python process of a bench's app (``PYTHONPATH``).

Only active when ``CHATS_MEMPROBE_DIR`` is set (``bench/load_bench.py --probe DIR`` sets it
and puts this folder on the app's ``PYTHONPATH``). A daemon thread waits for request files
``DIR/req-<label>``; for each it writes ``DIR/<pid>-<label>.json``: RSS and its kinds (from
``/proc/self/status``), the threads, glibc's heap figures, SQLite's own heap
(``sqlite3_memory_used``, the library the ``sqlite3`` module links), and, when tracemalloc
runs (``PYTHONTRACEMALLOC``), the traced Python heap grouped by file. Nothing here is
imported by the app: it measures the process it is loaded into.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

_DIR = os.environ.get("CHATS_MEMPROBE_DIR")
_TOP_FILES = 60


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _sqlite_heap() -> int | None:
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        return None
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return int(lib.sqlite3_memory_used())


_DBSTATUS = {"cache": 1, "schema": 2, "statements": 3}  # SQLITE_DBSTATUS_* (sqlite3.h)


def _connections() -> dict[str, dict[str, int]]:
    """Per kind of file (directory, chat, accounts...): connections and their SQLite heap.

    Reads each open ``backend.storage.Database``'s connection with ``sqlite3_db_status``; the
    ``sqlite3*`` handle is the first field after the object header of CPython's connection
    object (3.11), which is what a probe may rely on and the app never does.
    """
    import gc

    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
    except OSError:
        return {}
    lib.sqlite3_db_status.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_int), ctypes.c_int,
    ]  # fmt: skip
    totals: dict[str, dict[str, int]] = {}
    for obj in gc.get_objects():
        if type(obj).__name__ != "Database" or not hasattr(obj, "_conn"):
            continue
        if getattr(obj, "_closed", True) or getattr(obj, "_conn", None) is None:
            continue  # closed, or opened on demand and not used yet
        path = getattr(obj, "path", None)
        kind = "memory" if path is None else ("chat" if path.parent.name == "chats" else path.name)
        entry = totals.setdefault(kind, {"connections": 0, **dict.fromkeys(_DBSTATUS, 0)})
        entry["connections"] += 1
        handle = ctypes.c_void_p.from_address(id(obj._conn) + 2 * ctypes.sizeof(ctypes.c_void_p))
        for name, op in _DBSTATUS.items():
            current, high = ctypes.c_int(), ctypes.c_int()
            lib.sqlite3_db_status(handle, op, ctypes.byref(current), ctypes.byref(high), 0)
            entry[name] += current.value
    return totals


def _malloc_info() -> dict[str, int]:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    return {"arena": info.arena, "mmapped": info.hblkhd, "in_use": info.uordblks,
            "free": info.fordblks}  # fmt: skip


def _pymalloc() -> dict[str, int]:
    """pymalloc's own figures: small Python objects live in its 1 MiB arenas, which are mapped
    outside malloc (so ``malloc`` above never sees them). ``sys._debugmallocstats`` writes to
    file descriptor 2, borrowed for a moment: an app log line written meanwhile lands here."""
    with tempfile.TemporaryFile(mode="w+") as out:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    wanted = {
        "# arenas allocated current": "arenas",
        "# bytes in allocated blocks": "in_blocks",
        "# bytes in available blocks": "free_in_pools",
        "# bytes lost to pool headers": "pool_headers",
        "# bytes lost to quantization": "quantization",
    }
    figures: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition("=")
        name = wanted.get(key.strip())
        if name is not None:
            figures[name] = int(value.strip().replace(",", ""))
        elif "unused pools" in key:
            figures["unused_pools"] = int(value.strip().replace(",", ""))
    return figures


def _status() -> dict[str, int]:
    wanted = ("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads")
    out: dict[str, int] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            out[key] = int(value.split()[0])
    return out


def _report(label: str) -> dict[str, Any]:
    report: dict[str, Any] = {
        "pid": os.getpid(),
        "label": label,
        "status": _status(),
        "malloc": _malloc_info(),
        "pymalloc": _pymalloc(),
        "sqlite_heap": _sqlite_heap(),
        "connections": _connections(),
        "threads": sorted(t.name for t in threading.enumerate()),
    }
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        stats = snapshot.statistics("filename")
        report["traced"] = sum(stat.size for stat in stats)
        report["by_file"] = {stat.traceback[0].filename: stat.size for stat in stats[:_TOP_FILES]}
        # Also every frame's file, so a caller's share is visible (attributed to the
        # innermost project/library frame of each allocation's traceback).
        snapshot.dump(str(Path(_DIR or ".") / f"{os.getpid()}-{label}.snapshot"))
    return report


def _serve(folder: Path) -> None:
    done: set[str] = set()
    while True:
        for request in folder.glob("req-*"):
            label = request.name[4:]
            if label in done:
                continue
            done.add(label)
            out = folder / f"{os.getpid()}-{label}.json"
            out.write_text(json.dumps(_report(label), indent=1))
        time.sleep(0.2)


def _start() -> None:
    threading.Thread(target=_serve, args=(Path(_DIR or "."),), name="memprobe", daemon=True).start()


if _DIR:
    _start()
    os.register_at_fork(after_in_child=_start)  # a forked worker has no copy of the thread
