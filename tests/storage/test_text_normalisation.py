"""The storage text rule: lone surrogates become U+FFFD, split pairs join, the rest is kept."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.errors import InvalidInputError
from backend.storage import Database, join_text, live_text, well_formed_text
from tests.support.unicode_text import any_text, is_well_formed, surrogates, valid_unicode


class TestSqliteText:
    def test_well_formed_text_is_returned_as_the_same_object(self):
        for text in ("plain ascii", "héllo wörld", "你好", "emoji 😀 here", ""):
            assert well_formed_text(text) is text

    def test_a_lone_surrogate_becomes_one_replacement_character(self):
        assert well_formed_text("a\ud83db") == "a\ufffdb"
        assert well_formed_text("\ude00") == "\ufffd"
        assert well_formed_text("end\ud800") == "end\ufffd"

    def test_a_pair_written_as_two_code_units_becomes_the_code_point(self):
        assert well_formed_text("\ud83d\ude00") == "😀"
        assert well_formed_text("x\ud83d\ude00y") == "x😀y"

    def test_pairs_and_lone_units_are_told_apart(self):
        # high, (high low), low, x, high
        expected = "\ufffd\U00010000\ufffdx\ufffd"
        assert well_formed_text("\ud800\ud800\udc00\udc00x\ud800") == expected
        # low before high is no pair
        assert well_formed_text("\ude00\ud83d") == "\ufffd\ufffd"

    @given(any_text)
    def test_the_result_always_binds_in_sqlite(self, text):
        result = well_formed_text(text)
        assert is_well_formed(result)
        connection = sqlite3.connect(":memory:")
        assert connection.execute("SELECT ?", (result,)).fetchone()[0] == result

    @given(any_text)
    def test_the_rule_is_idempotent_and_never_lengthens_text(self, text):
        once = well_formed_text(text)
        assert well_formed_text(once) == once
        assert len(once) <= len(text)

    def test_nul_becomes_one_replacement_character_and_nothing_else_changes(self):
        assert well_formed_text("a\x00b\x00") == "a\ufffdb\ufffd"
        assert well_formed_text("\x00\ud83d\ude00\ud800") == "\ufffd😀\ufffd"
        assert well_formed_text("tab\tnew\nline\x01\x7f") == "tab\tnew\nline\x01\x7f"

    @given(st.lists(st.one_of(valid_unicode, surrogates)))
    def test_every_well_formed_run_of_the_input_is_kept_in_order(self, pieces):
        result = well_formed_text("".join(pieces))
        position = 0
        for piece in pieces:
            if is_well_formed(piece):
                piece = piece.replace("\x00", "\ufffd")  # the one character the rule maps
                found = result.find(piece, position)
                assert found >= 0, (piece, result)
                position = found + len(piece)


class TestJoinText:
    def test_a_pair_split_between_pieces_is_joined(self):
        assert join_text(["smile \ud83d", "\ude00!"]) == "smile 😀!"

    def test_lone_surrogates_are_kept_exactly(self):
        assert join_text(["a\ud800", "b"]) == "a\ud800b"

    @given(st.lists(any_text))
    def test_the_joined_text_spells_the_same_utf16_code_units(self, pieces):
        joined = join_text(pieces)
        assert joined.encode("utf-16-le", "surrogatepass") == "".join(pieces).encode(
            "utf-16-le", "surrogatepass"
        )
        assert well_formed_text(joined) == well_formed_text("".join(pieces))


class TestLiveText:
    def test_a_trailing_high_surrogate_waits_for_the_next_delta(self):
        assert live_text("", "ok \ud83d") == ("ok ", "\ud83d")
        assert live_text("\ud83d", "\ude00 done") == ("😀 done", "")

    def test_a_held_unit_that_pairs_with_nothing_is_shown_as_a_replacement(self):
        assert live_text("\ud83d", "x") == ("\ufffdx", "")

    @given(st.lists(any_text))
    def test_shown_text_is_well_formed_and_adds_up_to_the_stored_rule(self, deltas):
        held, shown = "", []
        for delta in deltas:
            text, held = live_text(held, delta)
            assert is_well_formed(text)
            shown.append(text)
        assert "".join(shown) + well_formed_text(held) == well_formed_text("".join(deltas))


class TestTheChokePoint:
    def test_binding_a_lone_surrogate_is_a_clear_input_error_that_loses_nothing(self, tmp_path):
        db = Database(tmp_path / "t.sqlite")
        db.execute("CREATE TABLE t (v TEXT)")
        with (
            pytest.raises(InvalidInputError, match="lone UTF-16 surrogate"),
            db.transaction(),
        ):
            db.execute("INSERT INTO t VALUES (?)", ("kept",))
            db.execute("INSERT INTO t VALUES (?)", ("x\ud800",))
        with db.transaction():
            db.executemany("INSERT INTO t VALUES (?)", [("a",), (well_formed_text("b\ud800"),)])
        assert [row[0] for row in db.query("SELECT v FROM t")] == ["a", "b\ufffd"]
        db.close()
