"""Runs this runtime is not executing: recovering orphans, and announcing ends seen elsewhere.

Several processes may serve one data folder (app workers, a restarted dev server), each with
its own runtime and in-process leases; a chat's runs live in the chat's file, so any of them
may claim a chat's next run. Two duties follow:

* **Orphans.** A run left ``running`` by a process that stopped (crash, restart, hot reload) is
  marked ``failed`` with ``INTERRUPTED_ERROR``, keeping the reply its last checkpoint saved,
  and ``run.failed`` tells this runtime's watchers. A run is orphaned when no lease holds the
  chat, this runtime is not running it, and the process that claimed it
  (``RunRecord.claimed_by``) is gone: a per-process lease store cannot see another process's
  run, but the pid can. A run another *live* process is writing is left alone.
* **Lost leases.** With a lease store every process sees (``FencedLockStore``, Redis), the
  lease is the authority, not the pid: a run left ``running`` while nobody holds its
  conversation's lease has lost its holder, and a run claimed under an older token than the
  lease the run queue holds now is taken over in the claim's own transaction
  (:meth:`Recovery.take_over`), failed as interrupted like an orphan. Its holder, if still
  alive, is refused at its next checkpoint or its commit (fencing).
* **Ends seen elsewhere.** Every open run this runtime is not executing is *followed*
  (``WorkingChat.followed``): when a look at the run table finds it finished, its end event is
  published here too, so a watcher learns how a message it sent ended even when another
  process answered it.

Looking is cheap: one indexed read of the chat's open runs. The run queue looks again every
``FOREIGN_RUN_POLL_S`` only while another process is running one of the chat's runs, so an
idle chat costs nothing and an orphan is recovered within about that interval.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from backend.runtime.failures import INTERRUPTED_ERROR
from backend.runtime.locks import (
    DistributedLockStore,
    FencedLockStore,
    conversation_lock_key,
    may_be_running,
)
from backend.runtime.records import RunRecord, RunStatus
from backend.runtime.run_events import RunCancelled, RunCompleted, RunEnd, RunFailed
from backend.runtime.turn import Turn, TurnWriter
from backend.runtime.working_chats import WorkingChat

# While another process runs one of a chat's runs, how often its end is looked for.
FOREIGN_RUN_POLL_S = 0.1


@dataclass(frozen=True)
class OpenRuns:
    """What a look at a chat's run table left open."""

    running_elsewhere: bool  # a run this runtime is not executing, and may not recover
    queued: bool


class Recovery:
    """Recovers orphaned runs and announces the ends of followed runs."""

    def __init__(self, locks: DistributedLockStore, writer: TurnWriter) -> None:
        self._locks = locks
        self._writer = writer
        self._fenced = isinstance(locks, FencedLockStore)

    async def recover(self, conv: WorkingChat) -> OpenRuns:
        """Look at the chat's open runs: announce ended ones, fail orphans, follow the rest.

        The look is a snapshot taken before its awaits: a run this runtime enqueued after it
        is not ended (``_announce_ended`` checks), and one this runtime ended after it is not
        open (it is not followed again, which would announce its end a second time).
        """
        looked_at = conv.events.last_seq
        runs = await asyncio.to_thread(conv.store.open_runs, conv.chat_id)
        await self._announce_ended(conv, {run.id for run in runs})
        if not runs:
            return OpenRuns(running_elsewhere=False, queued=False)
        holder = await self._locks.holder(conversation_lock_key(conv.chat_id))
        running_elsewhere = False
        for run in runs:
            active_id = conv.active.run.id if conv.active is not None else None
            if run.id == active_id or run.id in _ended_here_since(conv, looked_at):
                continue
            conv.followed.setdefault(run.id, run)
            if run.status != RunStatus.RUNNING:
                continue
            if holder is not None or conv.active is not None or self._may_be_running(run):
                running_elsewhere = True
                continue
            await self._fail_orphan(conv, run)
        queued = any(run.status == RunStatus.QUEUED for run in runs)
        return OpenRuns(running_elsewhere=running_elsewhere, queued=queued)

    def _may_be_running(self, run: RunRecord) -> bool:
        """Whether a run nobody holds a lease for may still be written by its process."""
        if self._fenced and run.fence is not None:
            return False  # leases are shared: no lease, no writer (fencing stops a late one)
        return may_be_running(run.claimed_by)

    def take_over(self, conv: WorkingChat, token: int) -> list[tuple[RunRecord, bool]]:
        """Fail the runs still ``running`` under a lease older than ``token`` (held now).

        Synchronous, for the claim's transaction: (run, partial kept) of each run taken over,
        to :meth:`announce_interrupted` once it commits.
        """
        lost = [
            run
            for run in conv.store.open_runs(conv.chat_id)
            if run.status == RunStatus.RUNNING and run.fence is not None and run.fence < token
        ]
        taken: list[tuple[RunRecord, bool]] = []
        for run in lost:
            finished, partial = self._finish_interrupted(conv, run)
            if finished:
                taken.append((run, partial))
        return taken

    async def _fail_orphan(self, conv: WorkingChat, run: RunRecord) -> None:
        finished, partial = await asyncio.to_thread(self._finish_interrupted, conv, run)
        if finished:
            self.announce_interrupted(conv, run, partial)

    @staticmethod
    def announce_interrupted(conv: WorkingChat, run: RunRecord, partial: bool) -> None:
        """``run.failed`` with the interrupted sentence, for a run ended on its writer's behalf."""
        conv.publish(
            run.id,
            RunFailed(
                assistant_message_id=run.assistant_message_id,
                error=INTERRUPTED_ERROR,
                partial=partial,
            ),
        )

    def _finish_interrupted(self, conv: WorkingChat, run: RunRecord) -> tuple[bool, bool]:
        """Fail an orphaned run, keeping the reply saved so far: (finished, partial kept)."""
        with conv.database.transaction():
            turn = Turn.saved(conv.session.get_message(run.assistant_message_id))
            finished = self._writer.finish_unsuccessful(
                conv, run, turn, RunStatus.FAILED, INTERRUPTED_ERROR
            )
        return finished, bool(turn.parts)

    async def _announce_ended(self, conv: WorkingChat, open_ids: set[str]) -> None:
        """Publish the end of each followed run that is no longer open (it ended elsewhere).

        ``open_ids`` may predate a run followed since (enqueued here after the look): a run
        its record still shows open has not ended, whatever the look missed.
        """
        ended = [run_id for run_id in conv.followed if run_id not in open_ids]
        if not ended:
            return
        ends = await asyncio.to_thread(self._load_ends, conv, ended)
        for run_id, end in zip(ended, ends, strict=True):
            if end is not None and run_id in conv.followed:  # not ended here meanwhile
                conv.publish(run_id, end)

    def _load_ends(self, conv: WorkingChat, run_ids: list[str]) -> list[RunEnd | None]:
        return [_end_event(conv, conv.store.load_run(run_id)) for run_id in run_ids]


def _ended_here_since(conv: WorkingChat, seq: int) -> set[str]:
    """The runs whose end this runtime published after event ``seq`` of the chat."""
    return {e.run_id for e in conv.events.since(seq) if isinstance(e.payload, RunEnd)}


def _end_event(conv: WorkingChat, run: RunRecord) -> RunEnd | None:
    """The end event of a finished run, from what its process stored; None while it is open."""
    if not run.status.finished:
        return None
    turn = Turn.saved(conv.session.get_message(run.assistant_message_id))
    message_id = run.assistant_message_id
    if run.status == RunStatus.COMPLETED:
        return RunCompleted(assistant_message_id=message_id, text=turn.reply_text())
    partial = bool(turn.parts)
    if run.status == RunStatus.CANCELLED:
        return RunCancelled(assistant_message_id=message_id, partial=partial)
    return RunFailed(assistant_message_id=message_id, error=run.error or "", partial=partial)
