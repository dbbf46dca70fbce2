"""The conversation runtime (seed 004): threads, session state, runs, streamed replies.

Modules, one concern each:

* ``records``      value types: ``Conversation``, ``RunRecord``, ``RunEvent``, ``SessionState``
* ``agents``       versioned agent definitions and their registry (with a default agent)
* ``state_schema`` pure validation of session-state documents (size, schema, no secrets)
* ``store``        SQL of the runtime tables, inside each chat's own SQLite file
* ``state``        ``SessionStateStore`` (versioned get/put) and the run's typed handle
* ``locks``        ``DistributedLockStore`` (per-conversation leases) + in-process store
* ``events``       ordered, replayable run events per conversation
* ``prompt``       pure prompt assembly within the token budget
* ``tools``        ``remember`` and ``update_session_state``; tool parts in AI SDK shape
* ``compaction``   which summariser a conversation's compaction uses
* ``runtime``      ``ChatRuntime``: the public async API the UI calls
"""

from backend.runtime.agents import (
    DEFAULT_AGENT,
    DEFAULT_AGENT_ID,
    MEMORY_LABEL,
    AgentDefinition,
    AgentRegistry,
    ContextBlock,
    ModelSettings,
)
from backend.runtime.events import EventLog
from backend.runtime.locks import DistributedLockStore, InProcessLockStore
from backend.runtime.records import (
    Conversation,
    ModelInfo,
    RunEvent,
    RunKind,
    RunRecord,
    RunStatus,
    RunStatusView,
    RunTicket,
    SessionState,
    ThreadSummary,
)
from backend.runtime.runtime import ChatRuntime
from backend.runtime.state import SessionStateHandle, SessionStateStore
from backend.runtime.state_schema import DEFAULT_MAX_STATE_BYTES
from backend.runtime.tools import Tool, ToolContext, ToolError

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_AGENT_ID",
    "DEFAULT_MAX_STATE_BYTES",
    "MEMORY_LABEL",
    "AgentDefinition",
    "AgentRegistry",
    "ChatRuntime",
    "ContextBlock",
    "Conversation",
    "DistributedLockStore",
    "EventLog",
    "InProcessLockStore",
    "ModelInfo",
    "ModelSettings",
    "RunEvent",
    "RunKind",
    "RunRecord",
    "RunStatus",
    "RunStatusView",
    "RunTicket",
    "SessionState",
    "SessionStateHandle",
    "SessionStateStore",
    "ThreadSummary",
    "Tool",
    "ToolContext",
    "ToolError",
]
