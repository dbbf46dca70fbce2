"""A run's reply: what it accumulates while it streams, and the writes that save it.

Every write of a reply goes through :class:`TurnWriter`, so the assistant message always has
the same shape (``metadata = {"status", "runId", "model", "endpoint", "agent", "usage"?,
"error"?, "requestedBy"?}``: ``model`` and ``endpoint`` name the model the run was claimed
with, ``usage`` is :class:`backend.models.ReplyUsage`, ``requestedBy`` who asked for the reply,
from the run record) whoever writes it: a checkpoint, the final commit, a
failure, a cancel or a recovery (which keeps the usage its last checkpoint saved).

Atomicity: the commit writes the final message, the staged session state and the run record
in one transaction of the chat's file; a failure finishes the run and keeps the partial
reply in one transaction, and only if the run was still open (a late writer never
overwrites an end).

Fencing: a checkpoint and the commit first check, in their own transaction, that the run
still runs under the newest claim of its conversation (``RuntimeStore.check_fence``); a run
whose lease was taken over gets :class:`~backend.errors.LeaseLostError` and writes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.messages import REQUESTED_BY_KEY
from backend.models import ReplyUsage, ToolCall, Usage, call_usage
from backend.runtime.records import RunRecord, RunStatus
from backend.runtime.state import SessionStateHandle
from backend.runtime.tools import stored_input
from backend.runtime.working_chats import WorkingChat
from backend.sessions import estimate_string_tokens
from backend.storage import join_text, live_text


@dataclass
class Turn:
    """What one run accumulates while it streams."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    checkpointed_at: float = field(default_factory=time.monotonic)
    # A trailing high surrogate not shown yet: half of a pair the next delta completes.
    held: str = ""
    usage: ReplyUsage | None = None  # of the model calls that ended
    # Estimated prompt tokens of the model call in flight (None: no call in flight).
    call_sent: int | None = None

    @classmethod
    def saved(cls, message: dict[str, Any] | None) -> Turn:
        """The turn as a stored reply holds it (what a checkpoint saved, usage included)."""
        parts = (message or {}).get("parts") or []
        metadata = (message or {}).get("metadata")
        return cls(
            parts=[dict(p) for p in parts if isinstance(p, dict)],
            usage=ReplyUsage.from_metadata(metadata if isinstance(metadata, dict) else None),
        )

    def begin_call(self, sent_estimate: int) -> None:
        """A model call starts; ``sent_estimate`` is the estimate of the prompt it sends."""
        self.call_sent = sent_estimate

    def end_call(self, reported: Usage | None, calls: list[ToolCall]) -> None:
        """The call finished; count the server's usage, else estimate this call's output.

        Text of this call is still in ``text`` (flushed into ``parts`` only after it ends).
        """
        received = 0
        if reported is None:
            # stored_input: a model's arguments may nest too deep to serialise (RecursionError).
            received = estimate_string_tokens(join_text(self.text)) + sum(
                estimate_string_tokens(call.name + json.dumps(stored_input(call))) for call in calls
            )
        ended = call_usage(reported, sent_estimate=self.call_sent or 0, received_estimate=received)
        self.usage = ended if self.usage is None else self.usage.plus(ended)
        self.call_sent = None

    def current_usage(self) -> ReplyUsage | None:
        """Usage so far: the ended calls, plus an estimate of one in flight that sent text."""
        usage = self.usage
        if self.call_sent is not None and self.text:
            flight = ReplyUsage(
                self.call_sent, estimate_string_tokens(join_text(self.text)), estimated=True
            )
            usage = flight if usage is None else usage.plus(flight)
        if usage is None and self.parts:  # a reply saved before replies recorded usage
            usage = ReplyUsage(0, estimate_string_tokens(self.reply_text()), estimated=True)
        return usage

    def flush_text(self) -> None:
        if self.text:
            self.parts.append({"type": "text", "text": join_text(self.text)})
            self.text = []

    def all_parts(self) -> list[dict[str, Any]]:
        parts = list(self.parts)
        if self.text:
            parts.append({"type": "text", "text": join_text(self.text)})
        return parts

    def add_text(self, text: str) -> str:
        """Keep a streamed delta; return what may be shown live (well-formed Unicode)."""
        self.text.append(text)
        shown, self.held = live_text(self.held, text)
        return shown

    def reply_text(self) -> str:
        return "".join(str(p.get("text", "")) for p in self.all_parts() if p.get("type") == "text")


class TurnWriter:
    """Writes a run's reply message (synchronous: called from worker threads)."""

    def __init__(self, model_name: str, clock: Callable[[], int]) -> None:
        self._model_name = model_name
        self._clock = clock

    def checkpoint(self, conv: WorkingChat, run: RunRecord, turn: Turn) -> None:
        """Save the reply so far (status still ``running``) while the run is still running.

        The check and the write share a transaction, so a checkpoint that loses the race with
        the run's end (a cancel, a failure, a takeover) never overwrites the final state; a
        run that lost its lease or was ended elsewhere gets ``LeaseLostError`` and stops.
        """
        message = self.final_message(run, turn, {"status": "running"})
        with conv.database.transaction():
            conv.store.check_fence(run)
            conv.session.update_message(message)

    def commit(
        self, conv: WorkingChat, run: RunRecord, turn: Turn, handle: SessionStateHandle
    ) -> dict[str, Any]:
        """Final message + session state + run record: one transaction, all or nothing.
        Returns the message as stored (``run.completed`` carries it)."""
        message = self.final_message(run, turn, {"status": "completed"})
        now = self._clock()
        with conv.database.transaction():
            conv.store.check_fence(run)
            stored = conv.session.update_message(message)
            handle.commit()
            conv.store.finish_run(run.id, RunStatus.COMPLETED, now=now)
            conv.store.set_last_run(conv.chat_id, run.id, now)
        return message if stored is None else stored

    def finish_unsuccessful(
        self,
        conv: WorkingChat,
        run: RunRecord,
        turn: Turn,
        status: RunStatus,
        error: str | None,
    ) -> bool:
        """Keep the partial reply, marked; state changes of an unfinished turn are dropped.

        False if the run had already finished (nothing is written then).
        """
        extra: dict[str, Any] = {"status": status.value}
        if error:
            extra["error"] = error
        message = self.final_message(run, turn, extra)
        with conv.database.transaction():
            finished = conv.store.finish_run(run.id, status, now=self._clock(), error=error)
            if finished:
                conv.session.update_message(message)
        return finished

    def final_message(self, run: RunRecord, turn: Turn, extra: dict[str, Any]) -> dict[str, Any]:
        # The model recorded on the run at its claim; the writer's own only for runs claimed
        # before runs recorded one.
        model = run.model
        metadata: dict[str, Any] = {"runId": run.id, "model": self._model_name, **extra}
        if model is not None:
            metadata["model"] = model.model
            metadata["endpoint"] = model.endpoint
        if run.agent_id:
            metadata["agent"] = f"{run.agent_id}@{run.agent_version}"
        requester = run.requested_by
        if requester is not None:
            metadata[REQUESTED_BY_KEY] = requester.as_metadata()
        usage = turn.current_usage()
        if usage is not None:
            metadata.update(usage.metadata_entry())
        return {
            "id": run.assistant_message_id,
            "role": "assistant",
            "parts": turn.all_parts(),
            "metadata": metadata,
        }
