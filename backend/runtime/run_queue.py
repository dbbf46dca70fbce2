"""The per-conversation run queue: enqueue, claim under a lease, drain one run at a time.

Invariants (seed 004):

* **Nothing the user wrote is lost.** :meth:`RunQueue.enqueue` stores the user message, an
  empty assistant placeholder (``metadata.status == "queued"``) and the queued run in one
  transaction *before* any model is called.
* **Placeholders keep order.** Because the placeholder is stored at enqueue time, a message
  sent while a reply is streaming is appended *after* that reply on the same branch.
* **Serialised per conversation.** At most one running run (also a database invariant, so it
  holds across processes); runs are claimed oldest enqueue first, whichever process claims.
  The run reads its agent and session state at claim time.

One worker task per busy chat drains the queue. A lost claim race (another process's run is
running: ``ConflictError``) is not an error: the worker follows that run (see
:mod:`backend.runtime.recovery`) until it ends or its process is found gone, then claims the
next run.

Under a fenced lease store (Redis), each claim carries its lease's token (see
:mod:`backend.runtime.locks`): the claim takes over runs left ``running`` under an older
lease, and a claim refused because the store's counter fell behind the chat file (Redis lost
its data) advances the counter and tries again.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backend.clock import now_ms
from backend.errors import ConflictError, LeaseLostError
from backend.messages import REQUESTED_BY_KEY, Author, WrittenMessage
from backend.runtime.agents import AgentDefinition
from backend.runtime.bindings import Bindings
from backend.runtime.execute import TurnExecutor
from backend.runtime.locks import (
    DistributedLockStore,
    FencedLockStore,
    Lease,
    LeaseWaitAbandoned,
    conversation_lock_key,
    hold,
)
from backend.runtime.records import RunKind, RunRecord, RunStatus, RunTicket
from backend.runtime.recovery import FOREIGN_RUN_POLL_S, Recovery
from backend.runtime.run_events import RunCancelled, RunQueued, written_now
from backend.runtime.state import SessionStateHandle
from backend.runtime.turn import Turn, TurnWriter
from backend.runtime.working_chats import ActiveRun, WorkingChat
from backend.sessions import AppendResult

logger = logging.getLogger(__name__)


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class _Claim(enum.Enum):
    RAN = "ran"  # a run was claimed and executed
    EMPTY = "empty"  # nothing queued
    LOST = "lost"  # another run is running (another process claimed first)
    RETRY = "retry"  # the lease's token was refused; the lease store's counter was advanced


@dataclass(frozen=True)
class NewMessage:
    """A user message to store with its run: the message, and where it goes on the tree."""

    message: dict[str, Any]
    parent_id: str | None = None
    root: bool = False  # a new root (an edit of the first message), even without a parent


@dataclass(kw_only=True)
class RunQueue:
    """Enqueues runs and runs one worker per busy chat."""

    bindings: Bindings
    executor: TurnExecutor
    recovery: Recovery
    writer: TurnWriter
    locks: DistributedLockStore
    owner: str
    # Signs the runs this runtime claims, so another process can tell whether it is alive.
    claimant: str
    lease_ttl_s: float
    clock: Callable[[], int]
    closed: bool = False

    async def enqueue(
        self,
        conv: WorkingChat,
        kind: RunKind,
        *,
        user_message_id: str,
        new_message: NewMessage | None = None,
        requested_by: Author,
    ) -> RunTicket:
        """Store ``new_message`` (if any), the placeholder and the run; then wake the worker.

        The placeholder records ``requested_by`` (``metadata.requestedBy``): the reply is the
        model's, the request is that person's, and it stays on the reply when it is written."""
        run_id = new_id("run")
        assistant_id = new_id("msg")

        def write() -> tuple[RunRecord, tuple[WrittenMessage, ...]]:
            agent = self.bindings.agent_for(self.bindings.ensure_record(conv))
            placeholder = {
                "id": assistant_id,
                "role": "assistant",
                "parts": [],
                "metadata": {
                    "status": "queued",
                    "runId": run_id,
                    REQUESTED_BY_KEY: requested_by.as_metadata(),
                },
            }
            with conv.database.transaction():
                stored = [] if new_message is None else [_append_user_message(conv, new_message)]
                stored.append(conv.session.append_message(placeholder, parent_id=user_message_id))
                run = conv.store.enqueue_run(
                    run_id=run_id,
                    conversation_id=conv.chat_id,
                    kind=kind,
                    user_message_id=user_message_id,
                    assistant_message_id=assistant_id,
                    agent_id=agent.id,
                    agent_version=agent.version,
                    now=self.clock(),
                    requested_by=requested_by,
                )
            sent_at = now_ms()
            return run, tuple(written_now(r.message, r.parent_id, sent_at) for r in stored)

        # Under ``announcing``: no claim of this runtime's lands between the commit and the
        # event (see ``_claim_and_execute``), so run.queued is the run's first event here.
        async with conv.announcing:
            run, written = await asyncio.to_thread(write)
            # Followed until this runtime claims it: another process may claim it first.
            conv.followed[run.id] = run
            conv.publish(
                run.id,
                RunQueued(
                    kind=kind.value,
                    user_message_id=user_message_id,
                    assistant_message_id=assistant_id,
                    written=written,
                ),
            )
        self.wake(conv)
        return RunTicket(conv.chat_id, run.id, user_message_id, assistant_id)

    async def cancel_queued(self, conv: WorkingChat, run: RunRecord) -> bool:
        done = await asyncio.to_thread(
            self.writer.finish_unsuccessful, conv, run, Turn(), RunStatus.CANCELLED, None
        )
        if done:
            conv.publish(run.id, RunCancelled(assistant_message_id=run.assistant_message_id))
        return done

    def wake(self, conv: WorkingChat) -> None:
        conv.pending = True
        if conv.worker is None or conv.worker.done():
            conv.worker = asyncio.ensure_future(self._drain(conv))

    async def _drain(self, conv: WorkingChat) -> None:
        # One lease owner per worker: even two workers of this process (a conversation
        # rebuilt while an old handle still drains) never run a turn at the same time.
        owner = f"{self.owner}:{uuid.uuid4().hex[:8]}"
        try:
            while not self.closed:
                conv.pending = False
                key = conversation_lock_key(conv.chat_id)
                async with hold(
                    self.locks, key, owner, ttl_s=self.lease_ttl_s, abandon=self._is_closed
                ) as lease:
                    claim = await self._claim_and_execute(conv, lease)
                if claim in (_Claim.RAN, _Claim.RETRY):
                    continue
                if claim is _Claim.EMPTY and not conv.followed:
                    if conv.pending:
                        continue
                    return
                if not await self._wait_for_other_runs(conv) and not conv.pending:
                    return
        except LeaseWaitAbandoned:
            return  # closing: the queued runs stay queued for the next start
        except Exception:
            logger.exception("run worker of chat %s failed", conv.chat_id)

    def _is_closed(self) -> bool:
        return self.closed

    async def _wait_for_other_runs(self, conv: WorkingChat) -> bool:
        """Follow runs of other processes until none is running; True if runs are queued."""
        while True:
            runs = await self.recovery.recover(conv)
            if not runs.running_elsewhere or self.closed:
                return runs.queued
            await asyncio.sleep(FOREIGN_RUN_POLL_S)

    async def _claim_and_execute(self, conv: WorkingChat, lease: Lease) -> _Claim:
        try:
            # A run whose enqueue has committed but not yet published run.queued waits for
            # it: claimed now, its run.started (even its end) would reach watchers first.
            async with conv.announcing:
                if self.closed:
                    return _Claim.EMPTY  # stopping: nothing new is claimed, queued runs stay
                claimed, taken_over = await asyncio.to_thread(self._claim, conv, lease.token)
        except LeaseLostError:
            # The chat file remembers a newer token than this lease's: the store's counter
            # fell behind (Redis restarted empty). Advance it and take a fresh lease.
            if isinstance(self.locks, FencedLockStore):
                floor = await asyncio.to_thread(conv.store.fence_of, conv.chat_id)
                await self.locks.advance_fence(lease.key, floor)
            return _Claim.RETRY
        except ConflictError:
            return _Claim.LOST
        for lost, partial in taken_over:
            self.recovery.announce_interrupted(conv, lost, partial)
        if claimed is None:
            return _Claim.EMPTY
        run, agent, handle = claimed
        conv.followed.pop(run.id, None)
        active = ActiveRun(run)
        conv.active = active
        active.task = asyncio.ensure_future(self.executor.execute(conv, active, agent, handle))
        try:
            await asyncio.shield(active.task)
        finally:
            conv.active = None
        return _Claim.RAN

    def _claim(
        self, conv: WorkingChat, token: int | None
    ) -> tuple[
        tuple[RunRecord, AgentDefinition, SessionStateHandle] | None,
        list[tuple[RunRecord, bool]],
    ]:
        """Claim the oldest queued run and read what it runs with (agent, state) — one go.

        Also returns the runs taken over from an expired lease (``token``: see the module
        docstring), ended in the same transaction.
        """
        record = self.bindings.ensure_record(conv)
        agent = self.bindings.agent_for(record)
        model = self.bindings.model_for(record, agent)  # fixed here: the reply names it
        with conv.database.transaction():
            taken_over = self.recovery.take_over(conv, token) if token is not None else []
            run = conv.store.claim_next_run(
                conv.chat_id,
                agent_id=agent.id,
                agent_version=agent.version,
                now=self.clock(),
                claimed_by=self.claimant,
                fence=token,
                model=model,
            )
            if run is None:
                return None, taken_over
            handle = conv.states.open(conv.chat_id, agent.state_schema)
            conv.store.set_last_run(conv.chat_id, run.id, self.clock())
            placeholder = conv.session.get_message(run.assistant_message_id)
            if placeholder is not None:
                metadata = dict(placeholder.get("metadata") or {})
                metadata.update(status="running", runId=run.id)
                conv.session.update_message({**placeholder, "metadata": metadata})
        return (run, agent, handle), taken_over


def _append_user_message(conv: WorkingChat, new: NewMessage) -> AppendResult:
    if new.root:
        return conv.session.append_message(new.message, parent_id=None)
    if new.parent_id is not None:
        return conv.session.append_message(new.message, parent_id=new.parent_id)
    return conv.session.append_message(new.message)
