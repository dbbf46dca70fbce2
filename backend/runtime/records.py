"""The runtime's value types: conversation record, runs, session state, tickets, events.

Pure data. Timestamps are integer milliseconds since the epoch, like every store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from backend.messages import Author
from backend.models import ModelRef

VersionPolicy = Literal["pinned", "latest"]


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class RunKind(StrEnum):
    SEND = "send"
    REGENERATE = "regenerate"
    EDIT = "edit"


@dataclass(frozen=True, slots=True)
class Conversation:
    """A thread's binding and ownership (seed 004 ``Conversation``).

    ``agent_version`` is set when ``agent_version_policy == "pinned"``: every run of this
    conversation uses exactly that version. Under ``"latest"`` each run resolves the newest
    version at claim time (and records it on the run).

    ``archived_at``: the runtime hands out the directory's value (``ChatSummary.archived_at``,
    the one place archive is kept, see ``backend.chats.chat_records``); the conversation table's
    own column is no longer written by archiving.
    """

    id: str
    tenant_id: str
    owner_principal_id: str
    participant_ids: tuple[str, ...]
    agent_id: str
    agent_version_policy: VersionPolicy
    agent_version: int | None
    session_state_version: int
    title: str
    last_run_id: str | None
    archived_at: int | None
    created_at: int
    updated_at: int
    # The model chosen for this chat (the picker); None: the bound agent's, else the default.
    # Two plain columns rather than a ModelRef so the record exports as flat JSON.
    model_endpoint: str | None = None
    model_name: str | None = None

    @property
    def model(self) -> ModelRef | None:
        return _ref(self.model_endpoint, self.model_name)


def _ref(endpoint: str | None, model: str | None) -> ModelRef | None:
    return ModelRef(endpoint, model) if endpoint and model else None


@dataclass(frozen=True, slots=True)
class SessionState:
    """One version of a conversation's working memory."""

    version: int
    data: dict[str, Any]
    bytes: int = 0
    updated_at: int = 0


@dataclass(frozen=True, slots=True)
class ThreadSummary:
    """The newest compacted summary of a thread; ``version`` counts summaries so far."""

    version: int
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: int


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str
    conversation_id: str
    kind: RunKind
    status: RunStatus
    seq: int
    user_message_id: str
    assistant_message_id: str
    agent_id: str
    agent_version: int | None
    enqueued_at: int
    started_at: int | None = None
    finished_at: int | None = None
    error: str | None = None
    # The process that claimed it (``host:pid:runtime``, see ``locks.process_owner``); None
    # while queued, and for runs claimed before this was recorded.
    claimed_by: str | None = None
    # The fencing token of the lease it was claimed under (``locks.FencedLockStore``); None
    # under a per-process lease store.
    fence: int | None = None
    # The model that answers it, fixed at claim: what its reply says wrote it, even when
    # another process ends it (a recovery). None while queued, and for older runs.
    model_endpoint: str | None = None
    model_name: str | None = None
    # Who asked for the reply (a send, a retry, an edit: the owner or a member of a shared
    # chat), so every write of the reply says so; None for runs queued before it was recorded.
    requested_by_id: str | None = None
    requested_by_name: str | None = None

    @property
    def model(self) -> ModelRef | None:
        return _ref(self.model_endpoint, self.model_name)

    @property
    def requested_by(self) -> Author | None:
        if not self.requested_by_id:
            return None
        return Author(id=self.requested_by_id, name=self.requested_by_name or self.requested_by_id)


@dataclass(frozen=True, slots=True)
class RunTicket:
    """What a caller gets back at once: the run is queued and the user's message is stored."""

    chat_id: str
    run_id: str
    user_message_id: str
    assistant_message_id: str


@dataclass(frozen=True, slots=True)
class RunStatusView:
    running: RunRecord | None
    queued: tuple[RunRecord, ...]
    last_seq: int

    @property
    def busy(self) -> bool:
        return self.running is not None or bool(self.queued)


@dataclass(frozen=True, slots=True)
class AgentBinding:
    """What a chat header shows about its agent and model (plain values for the UI).

    ``update_available``: the chat is pinned and the agent has a newer version
    (``latest_version``); ``ChatRuntime.use_latest_agent`` moves it there in one call.
    """

    agent_id: str
    policy: VersionPolicy
    version: int  # the version the next turn runs
    latest_version: int
    model: ModelRef  # the model the next turn uses
    chosen_model: ModelRef | None  # the chat's own choice (None: the agent's or the default)

    @property
    def update_available(self) -> bool:
        return self.policy == "pinned" and self.latest_version > self.version


EventType = Literal[
    "run.queued",
    "run.started",
    "message.delta",
    "tool.call",
    "context.compacted",
    "run.completed",
    "run.failed",
    "run.cancelled",
]
RUN_END_EVENTS: frozenset[EventType] = frozenset(("run.completed", "run.failed", "run.cancelled"))
"""The events that end a run: after one, the run is over (whatever its outcome)."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One ordered event of a conversation's runs.

    ``seq`` increases by one per event within a conversation (for this runtime's lifetime);
    subscribers resume with ``subscribe(chat_id, after_seq=last_seen_seq)``.
    """

    seq: int
    type: EventType
    chat_id: str
    run_id: str
    data: dict[str, Any] = field(default_factory=dict)
    at: int = 0
