import backend.runtime
from tests.support.exports import assert_public_surface


def test_the_public_surface_is_pinned_and_sorted():
    assert_public_surface(
        backend.runtime,
        {
            "DEFAULT_AGENT",
            "DEFAULT_AGENT_ID",
            "DEFAULT_MAX_STATE_BYTES",
            "MEMORY_LABEL",
            "AgentDefinition",
            "AgentRegistry",
            "ChatRuntime",
            "SingleModel",
            "ModelSource",
            "LibraryAgents",
            "AgentSource",
            "AgentBinding",
            "ContextBlock",
            "ContextMeter",
            "Conversation",
            "DistributedLockStore",
            "EventLog",
            "InProcessLockStore",
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
            "start_chat",
        },
    )
