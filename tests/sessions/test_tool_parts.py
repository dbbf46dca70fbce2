"""What a tool part is and which tool it called: one answer for token estimates, compaction,
prompts, transcripts and exports."""

from __future__ import annotations

import pytest

from backend.sessions import is_tool_part, tool_name, tool_part_type


class TestToolParts:
    def test_a_part_made_for_a_tool_names_that_tool(self):
        part = {"type": tool_part_type("remember"), "toolCallId": "c1", "input": {}}
        assert is_tool_part(part["type"])
        assert tool_name(part) == "remember"

    def test_an_imported_dynamic_tool_is_named_by_its_tool_name(self):
        part = {"type": "dynamic-tool", "toolName": "python", "output": "4"}
        assert is_tool_part(part["type"])
        assert tool_name(part) == "python"

    @pytest.mark.parametrize("kind", ["text", "file", "reasoning", "step-start", "tools", None, 3])
    def test_other_parts_are_not_tool_parts(self, kind):
        assert not is_tool_part(kind)
