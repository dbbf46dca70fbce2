"""What this process has open, read from ``/proc/self/fd`` (Linux)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def handles_of(path: Path) -> int:
    """This process's open file descriptors on ``path`` (one per connection to the file)."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile (listing's own descriptor)
            if os.readlink(fd) == str(path):
                count += 1
    return count
