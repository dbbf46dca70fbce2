"""The agent library (seed 004 "bound agent"): a user's agents, versioned and immutable.

* ``definition``  ``AgentSpec`` / ``AgentVersion`` values, the known tools and the limits (pure)
* ``store``       SQL of the library tables in the user's directory database
* ``library``     ``AgentLibrary``: create, save (a new version), load one version, list, page

The runtime runs a version through ``backend.runtime.LibraryAgents``.
"""

from backend.agents.definition import (
    KNOWN_TOOLS,
    MAX_INSTRUCTIONS_CHARS,
    MAX_NAME_CHARS,
    MAX_OUTPUT_TOKENS,
    MAX_STARTER_CHARS,
    MAX_STARTER_PROMPTS,
    MAX_TEMPERATURE,
    MIN_TEMPERATURE,
    AgentSpec,
    AgentSummary,
    AgentVersion,
    VersionInfo,
    checked_spec,
)
from backend.agents.library import AgentLibrary
from backend.models import SEARCH_CHATS_TOOL, UPDATE_STATE_TOOL

__all__ = [
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
]
