"""Stopping a runtime cleanly (SIGTERM, a restart): what happens to replies in flight.

The promise, the same whether the process is stopped or killed:

* **A streaming reply is kept, marked interrupted.** Its text so far (also what arrived since
  the last checkpoint) is saved with ``metadata.status == "failed"`` and the sentence
  ``INTERRUPTED_ERROR``, and the run is ``failed`` — exactly what recovery writes for a run
  whose process was killed, so a tab shows both the same way and the user can continue the
  chat or regenerate that reply. Watchers get the ``run.failed`` event before their
  subscriptions end.
* **Queued runs stay queued.** Nothing new is claimed once stopping began; the next runtime
  that opens the chat (a tab watching it, a new message) answers them in order.
* **Prompt.** A reply being committed is let finish; post-turn work (preview, title) gets
  ``grace_s`` and is then cancelled. A kill after this point loses nothing more: recovery
  covers it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from backend.runtime.working_chats import WorkingChat

DEFAULT_SHUTDOWN_GRACE_S = 5.0
# How often stopping looks again for a run claimed just as it began (a claim already in a
# worker thread when the queue closed).
SHUTDOWN_POLL_S = 0.05


def interrupt(conv: WorkingChat) -> None:
    """Stop the chat's streaming reply, to be saved as interrupted (not cancelled)."""
    active = conv.active
    if active is None or active.task is None or active.committing or active.cancel_requested:
        return  # nothing running, committing anyway, or already ending
    active.interrupted = True
    active.cancel_requested = True
    active.task.cancel()


async def stop_chats(working_chats: Callable[[], list[WorkingChat]], *, grace_s: float) -> None:
    """Interrupt every streaming reply and wait for the chats' tasks (see the module doc).

    ``working_chats`` is called on every look: a chat may be opened by a worker meanwhile.
    Call with the run queue already closed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_s
    while True:
        chats = working_chats()
        for conv in chats:
            interrupt(conv)
        pending = _pending_tasks(chats)
        if not pending:
            return
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        await asyncio.wait(pending, timeout=min(remaining, SHUTDOWN_POLL_S))
    for task in pending:
        task.cancel()
    for task in pending:
        with contextlib.suppress(BaseException):
            await task


def _pending_tasks(chats: list[WorkingChat]) -> set[asyncio.Task[None]]:
    tasks: set[asyncio.Task[None]] = set()
    for conv in chats:
        active_task = conv.active.task if conv.active is not None else None
        for task in (conv.worker, active_task, *conv.background):
            if task is not None and not task.done():
                tasks.add(task)
    return tasks
