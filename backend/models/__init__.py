"""Model access: one provider interface, an OpenAI-compatible streaming client, and the
built-in offline assistant used when no model is configured.

Pick a provider with :func:`provider_from_settings`; the runtime talks only to
:class:`ModelProvider` and the event types re-exported here.
"""

from backend.models.offline import (
    OFFLINE_LABEL,
    OfflineAssistant,
    extractive_summary,
    heuristic_title,
    keywords,
)
from backend.models.openai_compatible import OpenAICompatibleProvider
from backend.models.openai_wire import StreamDecoder, request_body
from backend.models.provider import ModelProvider, provider_for_endpoint, provider_from_settings
from backend.models.refs import DEFAULT_ENDPOINT, OFFLINE_ENDPOINT, OFFLINE_REF, ModelRef
from backend.models.types import (
    REMEMBER_TOOL,
    REPLY_CUT_REASON,
    SEARCH_CHATS_TOOL,
    TOOL_NAMES,
    UPDATE_STATE_TOOL,
    ContextItem,
    ContextSection,
    Finish,
    ModelEvent,
    ModelMessage,
    ModelRequest,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
    reply_cut_marker,
)
from backend.models.usage import ReplyUsage, call_usage

__all__ = [
    "DEFAULT_ENDPOINT",
    "OFFLINE_ENDPOINT",
    "OFFLINE_LABEL",
    "OFFLINE_REF",
    "REMEMBER_TOOL",
    "REPLY_CUT_REASON",
    "SEARCH_CHATS_TOOL",
    "TOOL_NAMES",
    "UPDATE_STATE_TOOL",
    "ContextItem",
    "ContextSection",
    "Finish",
    "ModelEvent",
    "ModelMessage",
    "ModelProvider",
    "ModelRef",
    "ModelRequest",
    "OfflineAssistant",
    "OpenAICompatibleProvider",
    "ReplyUsage",
    "StreamDecoder",
    "TextDelta",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "call_usage",
    "extractive_summary",
    "heuristic_title",
    "keywords",
    "provider_for_endpoint",
    "provider_from_settings",
    "reply_cut_marker",
    "request_body",
]
