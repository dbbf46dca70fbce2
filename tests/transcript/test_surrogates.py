"""Issue 10: a stored message holding a lone UTF-16 surrogate still renders.

The stored JSON keeps it exactly; what a front end receives is well-formed (U+FFFD), because a
UI sends it on as UTF-8 (Reflex serialises state without escapes).
"""

from hypothesis import given

from backend.transcript import entry_from_message
from tests.support.unicode_text import any_text, is_well_formed


class TestRenderedText:
    def test_a_lone_surrogate_is_shown_as_a_replacement_character(self):
        entry = entry_from_message(
            {"id": "m", "role": "assistant", "parts": [{"type": "text", "text": "cut \ud83d"}]}
        )
        assert entry.text == "cut \ufffd"

    def test_a_pair_spelled_as_two_code_units_is_shown_as_its_character(self):
        entry = entry_from_message(
            {"id": "m", "role": "user", "parts": [{"type": "text", "text": "\ud83d\ude00"}]}
        )
        assert entry.text == "😀"

    @given(any_text, any_text)
    def test_text_and_tool_payloads_are_always_well_formed(self, text, payload):
        tool = {"type": "tool-search", "input": {"q": payload}, "output": payload}
        entry = entry_from_message(
            {"id": "m", "role": "assistant", "parts": [{"type": "text", "text": text}, tool]}
        )
        assert is_well_formed(entry.text)
        assert is_well_formed(entry.tool_calls[0].input)
        assert is_well_formed(entry.tool_calls[0].output)
