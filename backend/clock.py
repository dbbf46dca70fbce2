"""Wall-clock time in the unit every table and event stores: integer milliseconds since the epoch.

One definition, so two modules never disagree by a rounding rule (``int(time.time() * 1000)``
can differ from ``time_ns() // 10**6`` by one). Code that needs a controllable clock takes a
``Callable[[], int]`` defaulting to :func:`now_ms`.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
