"""The conversation runtime (seed 004): threads, session state, runs, streamed replies.

Modules, one concern each (a sent message walks them top to bottom):

* ``runtime``      ``ChatRuntime``: the public async API the UI calls; a thin facade
* ``conversation_settings`` the facade's calls on a chat's record, agent, model, meter, state
* ``chat_opener``  a live chat id to its working chat, its runs looked at on first open
* ``ports``        ``DirectoryPort`` / ``ChatPort``: what the runtime needs from ``backend.chats``
* ``working_chats`` per-chat runtime objects (``WorkingChat``) and the cache that keeps them open
* ``bindings``     the conversation record: owner, and the agent (version) it is bound to
* ``new_chat``     ``start_chat``: a new chat bound to the agent the user picked
* ``run_queue``    enqueue, claim under a per-chat lease, one worker draining each busy chat
* ``execute``      one run: gather material, stream, tool rounds, commit or fail
* ``window``       the prompt's history window, the thread summary, the compaction trigger
* ``meter``        the composer's context meter: the next turn's prompt against the window
* ``retrieval``    past user messages quoted into a turn
* ``turn``         a run's reply: what it accumulates and every write that saves it
* ``titles``       after a turn: the sidebar preview and a title for an untitled chat
* ``recovery``     runs of stopped processes failed as interrupted; other processes' runs followed
* ``failures``     the sentences a failed run shows
* ``records``      value types: ``Conversation``, ``RunRecord``, ``RunEvent``, ``SessionState``
* ``agents``       agent definitions, their registry (with a default agent), ``AgentSource``
* ``library_agents`` ``LibraryAgents``: a user's library (``backend.agents``) as a source
* ``model_choice`` which model a turn uses (chat's choice, agent's, default); ``ModelSource``
* ``state_schema`` pure validation of session-state documents (size, depth, schema, no secrets)
* ``store``        SQL of the runtime tables, inside each chat's own SQLite file
* ``store_tables`` those tables and their migrations (``pg_store`` has its own)
* ``state``        ``SessionStateStore`` (versioned get/put) and the run's typed handle
* ``locks``        ``DistributedLockStore`` (per-conversation leases, fencing) + in-process store
* ``redis_locks``  the Redis store every worker process shares (``REFLEX_REDIS_URL``)
* ``hosting``      what a serving process builds from its settings: lock store, durability
* ``shutdown``     a clean stop: streaming replies saved as interrupted, queued runs kept
* ``events``       ordered, replayable run events per conversation
* ``prompt``       pure prompt assembly within the token budget
* ``tools``        ``remember`` and ``update_session_state``; tool parts in AI SDK shape
* ``compaction``   which summariser a conversation's compaction uses
"""

from backend.runtime.agents import (
    DEFAULT_AGENT,
    DEFAULT_AGENT_ID,
    MEMORY_LABEL,
    AgentDefinition,
    AgentRegistry,
    AgentSource,
    ContextBlock,
    ModelSettings,
)
from backend.runtime.events import EventLog, PublishedRunEvent
from backend.runtime.library_agents import LibraryAgents
from backend.runtime.locks import DistributedLockStore, InProcessLockStore
from backend.runtime.meter import ChatHeader, ContextMeter
from backend.runtime.model_choice import ModelSource, SingleModel
from backend.runtime.new_chat import start_chat
from backend.runtime.records import (
    RUN_END_EVENTS,
    AgentBinding,
    Conversation,
    RunEvent,
    RunKind,
    RunRecord,
    RunStatus,
    RunStatusView,
    RunTicket,
    SessionState,
    ThreadSummary,
)
from backend.runtime.run_events import (
    ContextCompacted,
    MessageDelta,
    RunCancelled,
    RunCompleted,
    RunEnd,
    RunFailed,
    RunPayload,
    RunQueued,
    RunStarted,
    ToolCalled,
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
    "RUN_END_EVENTS",
    "AgentBinding",
    "AgentDefinition",
    "AgentRegistry",
    "AgentSource",
    "ChatHeader",
    "ChatRuntime",
    "ContextBlock",
    "ContextCompacted",
    "ContextMeter",
    "Conversation",
    "DistributedLockStore",
    "EventLog",
    "InProcessLockStore",
    "LibraryAgents",
    "MessageDelta",
    "ModelSettings",
    "ModelSource",
    "PublishedRunEvent",
    "RunCancelled",
    "RunCompleted",
    "RunEnd",
    "RunEvent",
    "RunFailed",
    "RunKind",
    "RunPayload",
    "RunQueued",
    "RunRecord",
    "RunStarted",
    "RunStatus",
    "RunStatusView",
    "RunTicket",
    "SessionState",
    "SessionStateHandle",
    "SessionStateStore",
    "SingleModel",
    "ThreadSummary",
    "Tool",
    "ToolCalled",
    "ToolContext",
    "ToolError",
    "start_chat",
]
