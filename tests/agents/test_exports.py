import backend.agents
from tests.support.exports import assert_public_surface


def test_the_public_surface_is_pinned_and_sorted():
    assert_public_surface(
        backend.agents,
        {
            "KNOWN_TOOLS",
            "MAX_INSTRUCTIONS_CHARS",
            "MAX_NAME_CHARS",
            "MAX_OUTPUT_TOKENS",
            "MAX_STARTER_CHARS",
            "MAX_STARTER_PROMPTS",
            "MAX_TEMPERATURE",
            "MIN_TEMPERATURE",
            "SEARCH_CHATS_TOOL",
            "UPDATE_STATE_TOOL",
            "AgentLibrary",
            "AgentSpec",
            "AgentSummary",
            "AgentVersion",
            "VersionInfo",
            "checked_spec",
        },
    )
