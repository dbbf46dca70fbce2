"""Every string an event carries reaches the handlers as well-formed Unicode.

A client can send ``"\\ud800"``: kept in the tab's state, it made every later frame to the tab
fail to encode as UTF-8 (the tab hung, nothing said). The guard applies the storage text rule.
"""

from __future__ import annotations

from chatsapp.auth.guard import _well_formed


class TestEventTextIsWellFormed:
    def test_a_lone_surrogate_becomes_the_replacement_character(self):
        assert _well_formed("a\ud800b") == "a\ufffdb"

    def test_a_pair_sent_as_two_escapes_becomes_its_character(self):
        assert _well_formed("\ud83d\ude00") == "\U0001f600"

    def test_strings_nested_in_lists_and_dicts_are_made_well_formed_too(self):
        sent = {"vars": {"k\udc00": ["\ud800", 3, None, {"x": "\udfff"}]}}
        assert _well_formed(sent) == {"vars": {"k\ufffd": ["\ufffd", 3, None, {"x": "\ufffd"}]}}

    def test_well_formed_text_and_other_values_are_unchanged(self):
        text = "plain ✓ 😀"
        assert _well_formed(text) is text
        assert _well_formed(12) == 12 and _well_formed(True) is True
        for sent in ("\ud800", "a\ud800b", "\udc00\ud800"):
            _well_formed(sent).encode("utf-8")  # never raises
