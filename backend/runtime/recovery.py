"""Runs a stopped process left open: failed as interrupted, so they end for every watcher.

A run left ``running`` by a process that stopped (crash, restart, dev-mode hot reload) is
marked ``failed`` with ``INTERRUPTED_ERROR``, keeping the reply its last checkpoint saved,
and ``run.failed`` tells this runtime's watchers. A run is orphaned when no lease holds the
chat, this runtime is not running it, and the process that claimed it
(``RunRecord.claimed_by``) is gone: a per-process lease store cannot see another process's
run, but the pid can. A run another *live* process is writing is left alone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.locks import DistributedLockStore, conversation_lock_key, may_be_running
from backend.runtime.open_chats import OpenChat
from backend.runtime.records import RunRecord, RunStatus
from backend.runtime.turn import Turn, TurnWriter


@dataclass(frozen=True)
class OpenRuns:
    """What a look at a chat's run table left open."""

    running_elsewhere: bool  # a running run this runtime may not recover (blocked)
    queued: bool


class Recovery:
    """Recovers orphaned runs."""

    def __init__(self, locks: DistributedLockStore, writer: TurnWriter) -> None:
        self._locks = locks
        self._writer = writer

    async def recover(self, conv: OpenChat) -> OpenRuns:
        """Look at the chat's open runs and fail the orphans among them."""
        runs = await asyncio.to_thread(conv.store.open_runs, conv.chat_id)
        if not runs:
            return OpenRuns(running_elsewhere=False, queued=False)
        holder = await self._locks.holder(conversation_lock_key(conv.chat_id))
        running_elsewhere = False
        for run in runs:
            if run.status != RunStatus.RUNNING:
                continue
            if holder is not None or conv.active is not None or may_be_running(run.claimed_by):
                running_elsewhere = True
                continue
            await self._fail_orphan(conv, run)
        queued = any(run.status == RunStatus.QUEUED for run in runs)
        return OpenRuns(running_elsewhere=running_elsewhere, queued=queued)

    async def _fail_orphan(self, conv: OpenChat, run: RunRecord) -> None:
        finished, partial = await asyncio.to_thread(self._finish_interrupted, conv, run)
        if finished:
            conv.publish(
                "run.failed",
                run.id,
                {
                    "assistant_message_id": run.assistant_message_id,
                    "error": INTERRUPTED_ERROR,
                    "error_type": "",
                    "partial": partial,
                },
            )

    def _finish_interrupted(self, conv: OpenChat, run: RunRecord) -> tuple[bool, bool]:
        """Fail an orphaned run, keeping the reply saved so far: (finished, partial kept)."""
        with conv.database.transaction():
            turn = Turn.saved(conv.session.get_message(run.assistant_message_id))
            finished = self._writer.finish_unsuccessful(
                conv, run, turn, RunStatus.FAILED, INTERRUPTED_ERROR
            )
        return finished, bool(turn.parts)
