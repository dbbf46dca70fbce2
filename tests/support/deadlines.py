"""Every time limit a test waits on, in one place, and the one way to wait for a condition.

The suite runs on 2 cores shared by a browser, app servers and a second pytest process; a
step that takes a millisecond alone can wait seconds there. So no verdict may hang on a
wall-clock limit a loaded machine can miss:

* A test waits for what must happen (an event, a line from a child process, a condition, a
  page element) on the condition itself, with ``WAIT_S`` as a hang guard: reaching it means
  the code under test hung, so it is far above any pause a busy machine takes, and a passing
  test never waits for it.
* A limit under test that a prompt step must beat (a local server's first chunk arriving
  inside an idle limit) is at least ``MARGIN_S``: far above the longest pause seen between
  two steps on a loaded machine (about 1-2 s), so missing it means the code is wrong.
* A property about time passing (a slow consumer does not count as idle) takes an injected
  clock where it can, so the test neither waits for nor depends on real time.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

WAIT_S = 60.0
WAIT_MS = int(WAIT_S * 1000)  # the same guard for Playwright, which counts milliseconds
# A child Python process imports the backend before it answers: tens of seconds on 2 cores
# busy with a build; still a hang guard, never a measured limit.
CHILD_START_S = 120.0
MARGIN_S = 5.0
# How long a test lets an unreachable primary be asked about before "unknown" (a setting of
# the PostgreSQL scope under test, not a limit on anything measured).
SHORT_RESOLVE_S = 0.5
POLL_S = 0.005  # how often ``until`` looks again: a condition costs microseconds to check


async def until(
    condition: Callable[[], bool] | Callable[[], Awaitable[bool]],
    *,
    timeout_s: float = WAIT_S,
    what: str = "",
) -> None:
    """Return as soon as ``condition()`` (sync or async) holds; fail after ``timeout_s``.

    The event loop keeps running between checks, so work the condition waits for progresses.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if loop.time() > deadline:
            name = what or getattr(condition, "__qualname__", "condition")
            raise TimeoutError(f"{name} did not hold within {timeout_s:g}s")
        await asyncio.sleep(POLL_S)


def until_blocking(
    condition: Callable[[], bool], *, timeout_s: float = WAIT_S, what: str = ""
) -> None:
    """:func:`until` for a test with no event loop of its own to run (its loop, if any, is
    Playwright's): checks ``condition()`` from this thread, sleeping between checks."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            name = what or getattr(condition, "__qualname__", "condition")
            raise TimeoutError(f"{name} did not hold within {timeout_s:g}s")
        time.sleep(POLL_S * 10)


class ManualClock:
    """A monotonic clock (seconds) that moves only when the test moves it.

    For code that takes a ``clock`` (``backend.models.deadlines``): a "slow consumer" moves
    it far past a limit in no real time, and no real pause moves it, so the verdict holds on
    any machine.
    """

    def __init__(self, start_s: float = 1000.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds
