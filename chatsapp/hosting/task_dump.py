"""What every task of a server process's event loop waits on, written to its log on SIGUSR1.

A hang inside the event loop (a lock nobody will release, a future nobody will complete) leaves
every thread idle, so a thread dump (py-spy) shows nothing of it. ``kill -USR1 <pid>`` writes,
for each asyncio task of that worker, the chain of coroutines it is suspended in, innermost
last, and what the innermost one awaits. The browser tests' harness sends it when a story
fails, so a hang in CI names its cause in the report.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import signal
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)

DUMP_SIGNAL = signal.SIGUSR1
HEADING = "asyncio tasks of pid"  # the first words of a dump, for whoever reads the log
MAX_TASKS = 400  # a server with thousands of tabs still writes a log line of bounded size


def install() -> None:
    """Dump the running loop's tasks on ``DUMP_SIGNAL`` (call from inside the loop)."""
    asyncio.get_running_loop().add_signal_handler(DUMP_SIGNAL, dump_tasks)


def dump_tasks() -> None:
    log.warning("%s", describe_tasks(asyncio.all_tasks()))


def describe_tasks(tasks: set[asyncio.Task[Any]]) -> str:
    """Each task's name, its coroutine chain and what it awaits; the longest chains first
    (a task stuck deep in a lock outranks an idle server loop)."""
    chains = sorted(((task, awaiting(task)) for task in tasks), key=lambda tc: -len(tc[1]))
    lines = [f"{HEADING} {os.getpid()}: {len(tasks)}"]
    for task, chain in chains[:MAX_TASKS]:
        lines.append(f"task {task.get_name()}:")
        lines.extend(f"  {step}" for step in chain)
    if len(chains) > MAX_TASKS:
        lines.append(f"… and {len(chains) - MAX_TASKS} more")
    return "\n".join(lines)


def awaiting(task: asyncio.Task[Any]) -> list[str]:
    """Where ``task`` is suspended: one line per coroutine, outermost first, then what the
    innermost one awaits (a future, a lock's waiter) when it is no coroutine."""
    steps: list[str] = []
    awaited: Any = task.get_coro()
    frame: FrameType | None = None
    while awaited is not None:
        inner = _frame_of(awaited)
        if inner is None and frame is not None:
            # ``async with`` on an ``asynccontextmanager``: its ``__aenter__`` awaits the
            # generator's step, which does not name the generator; its ``self`` does.
            awaited = _generator_of(frame) or awaited
            inner = _frame_of(awaited)
        if inner is None:
            steps.append(f"awaits {awaited!r}"[:300])
            break
        frame = inner
        code = frame.f_code
        steps.append(f"{code.co_filename}:{frame.f_lineno} in {code.co_name}")
        awaited = _awaited_by(awaited)
    return steps


def _frame_of(awaitable: Any) -> FrameType | None:
    for name in ("cr_frame", "ag_frame", "gi_frame"):
        frame = getattr(awaitable, name, None)
        if frame is not None:
            return frame
    return None


def _generator_of(frame: FrameType) -> Any:
    generator = getattr(frame.f_locals.get("self"), "gen", None)
    return generator if inspect.isasyncgen(generator) else None


def _awaited_by(coroutine: Any) -> Any:
    for name in ("cr_await", "ag_await", "gi_yieldfrom"):
        awaited = getattr(coroutine, name, None)
        if awaited is not None:
            return awaited
    return None
