"""Tool parts of a message (the AI SDK ``UIMessage`` shape): which parts are tool calls, and
which tool each called. Token estimates, compaction, prompts, transcripts and exports all ask
here, so they agree on what a tool part is.

``tool-<name>`` parts are this app's tool calls (:mod:`backend.runtime.tools` makes them);
``dynamic-tool`` parts carry their tool's name in ``toolName`` (imports of other systems').
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TOOL_PART_PREFIX = "tool-"
DYNAMIC_TOOL_PART = "dynamic-tool"


def tool_part_type(tool: str) -> str:
    """The ``type`` of a part recording a call of ``tool``."""
    return TOOL_PART_PREFIX + tool


def is_tool_part(part_type: object) -> bool:
    return isinstance(part_type, str) and (
        part_type.startswith(TOOL_PART_PREFIX) or part_type == DYNAMIC_TOOL_PART
    )


def tool_name(part: Mapping[str, Any]) -> str:
    """The tool a tool part called: its ``toolName``, else the name in its ``type``."""
    name = part.get("toolName")
    if isinstance(name, str) and name:
        return name
    return str(part.get("type", "")).removeprefix(TOOL_PART_PREFIX)
