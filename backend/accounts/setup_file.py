"""``<data_dir>/setup-code.txt``: the plain setup code, for the console, until setup is done.

The database keeps only the code's hash (to check what the form receives). The plain code
also sits in this file, readable by the server's user only, so that every call of
``setup_code_for_console`` (each worker, each restart) prints the *same* code until an admin
exists, and an owner whose console scrolled away can read it again (the Jenkins
``initialAdminPassword`` pattern). It reveals nothing new: whoever can read the data folder
can read every chat and rewrite ``accounts.sqlite`` anyway. The file is removed once the
first admin exists; a file whose code does not match the stored hash is ignored and replaced.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

_MODE = 0o600


def read_setup_code(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def write_setup_code(path: Path, code: str) -> None:
    """Write atomically (a reader never sees half a code), owner-only from the start."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(code + "\n")
    os.replace(temporary, path)


def remove_setup_code(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
