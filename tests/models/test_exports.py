import backend.models
from tests.support.exports import assert_public_surface


def test_the_public_surface_is_pinned_and_sorted():
    assert_public_surface(
        backend.models,
        {
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
        },
    )
