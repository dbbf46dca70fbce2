"""Row chunking: messages over 1.5 MiB of JSON span continuation rows and read back exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.sessions import MAX_INLINE_ROW_BYTES, Sessions, split_content
from tests.sessions.conftest import raw_db, text_message


def chunk_rows(session, message_id: str) -> list[int]:
    rows = raw_db(session).query(
        "SELECT idx FROM session_message_chunks WHERE session_id = ? AND id = ? ORDER BY idx",
        (session.id, message_id),
    )
    return [row["idx"] for row in rows]


def content_chunks(session, message_id: str) -> int:
    row = raw_db(session).query_one(
        "SELECT content_chunks FROM session_messages WHERE session_id = ? AND id = ?",
        (session.id, message_id),
    )
    return row["content_chunks"]


class TestSliceBoundaries:
    @pytest.mark.parametrize(
        "text",
        [
            "",
            "a",
            "x" * 1000,
            "😀" * 97,
            "mixed ascii é ✓ 😀 中文" * 20,
            '{"json": ["value", 1]}' * 9,
        ],
    )
    def test_slices_rejoin_exactly_and_fit_the_budget(self, text):
        slices = split_content(text, 16)
        assert "".join(slices) == text
        assert all(len(piece.encode()) <= 16 for piece in slices)
        assert all(piece for piece in slices) or slices == [""]

    def test_the_empty_string_is_one_empty_slice(self):
        assert split_content("") == [""]

    def test_a_string_that_fits_is_one_slice(self):
        assert split_content("small", 16) == ["small"]

    def test_never_splits_a_code_point(self):
        for piece in split_content("😀" * 100 + "中" * 100, 16):
            piece.encode("utf-8")  # a split surrogate/code point would not encode cleanly
            assert piece == piece.encode().decode()

    def test_a_character_wider_than_the_budget_gets_a_slice_of_its_own(self):
        assert split_content("a😀b", 2) == ["a", "😀", "b"]

    @given(st.text(), st.integers(min_value=4, max_value=64))
    def test_any_text_rejoins_and_every_slice_fits(self, text, budget):
        slices = split_content(text, budget)
        assert "".join(slices) == text
        assert all(len(piece.encode("utf-8", "surrogatepass")) <= budget for piece in slices)


class TestContinuationRows:
    def test_a_message_that_fits_is_one_row(self, session):
        session.append_message(text_message("m", "x" * 1_000_000))
        assert content_chunks(session, "m") == 0
        assert chunk_rows(session, "m") == []

    def test_a_five_megabyte_message_spans_three_continuations_and_reads_back(self, session):
        message = text_message("big", "z" * 5_000_000)
        session.append_message(message)
        assert content_chunks(session, "big") == 3
        assert chunk_rows(session, "big") == [1, 2, 3]
        assert session.get_message("big") == message
        assert session.get_history() == [message]

    def test_two_million_characters_need_one_continuation(self, session):
        session.append_message(text_message("m", "z" * 2_000_000))
        assert content_chunks(session, "m") == 1

    def test_every_stored_slice_fits_the_row_budget(self, session):
        session.append_message(text_message("big", "é" * 2_000_000))
        rows = raw_db(session).query(
            "SELECT content FROM session_message_chunks"
            " UNION ALL SELECT content FROM session_messages"
        )
        assert all(len(row["content"].encode()) <= MAX_INLINE_ROW_BYTES for row in rows)

    def test_an_emoji_and_cjk_body_round_trips_exactly(self, session):
        message = text_message("uni", ("😀中文🎉" * 700_000)[:2_800_000])
        session.append_message(message)
        assert content_chunks(session, "uni") >= 4
        assert session.get_message("uni") == message

    def test_a_three_megabyte_tool_output_round_trips(self, session):
        message = {
            "id": "tool",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-search",
                    "toolCallId": "c1",
                    "state": "output-available",
                    "input": {"q": "x"},
                    "output": {"rows": ["r" * 100 for _ in range(30_000)]},
                }
            ],
        }
        session.append_message(message)
        assert content_chunks(session, "tool") == 1  # 3.1 MB: the row and one continuation
        assert session.get_message("tool") == message

    def test_a_shrinking_update_deletes_surplus_continuations(self, session):
        session.append_message(text_message("m", "z" * 5_000_000))
        session.update_message(text_message("m", "z" * 2_000_000))
        assert chunk_rows(session, "m") == [1]
        session.update_message(text_message("m", "tiny"))
        assert content_chunks(session, "m") == 0
        assert chunk_rows(session, "m") == []
        assert session.get_message("m") == text_message("m", "tiny")

    def test_a_growing_update_adds_continuations(self, session):
        session.append_message(text_message("m", "tiny"))
        big = text_message("m", "q" * 3_400_000)
        session.update_message(big)
        assert chunk_rows(session, "m") == [1, 2]
        assert session.get_message("m") == big

    def test_an_update_compares_the_full_reassembled_content(self, session, events):
        body = "a" * 3_300_000
        session.append_message(text_message("m", body))
        assert session.update_message(text_message("m", body)) is not None
        assert [e.type for e in events] == ["append"]
        changed_at_the_end = body[:-1] + "b"
        session.update_message(text_message("m", changed_at_the_end))
        assert [e.type for e in events] == ["append", "update"]
        assert session.get_message("m") == text_message("m", changed_at_the_end)

    def test_delete_and_clear_remove_continuation_rows(self, sessions):
        session = sessions.session("s")
        session.append_message(text_message("a", "z" * 2_000_000))
        session.append_message(text_message("b", "z" * 2_000_000))
        session.delete_messages(["a"])
        assert chunk_rows(session, "a") == []
        assert chunk_rows(session, "b") == [1]
        session.clear_messages()
        assert chunk_rows(session, "b") == []

    def test_an_import_chunks_an_over_budget_message(self, session):
        message = text_message("i", "w" * 3_300_000)
        session.import_message(message, parent_id=None, created_at=1)
        assert content_chunks(session, "i") == 2
        assert session.get_message("i") == message

    def test_row_stats_and_budgets_charge_continuation_bytes(self, session):
        session.append_message(text_message("h1", "small"))
        session.append_message(text_message("big", "z" * 3_300_000))
        session.append_message(text_message("h2", "small"))
        stats = {s.id: s for s in session.get_history_row_stats()}
        assert stats["big"].bytes > MAX_INLINE_ROW_BYTES
        assert stats["big"].bytes >= 3_300_000
        recent = session.get_recent_history(1_000_000)
        assert [m["id"] for m in recent.messages] == ["h2"]
        assert recent.truncated is True

    def test_a_chunked_message_survives_reopening_the_file(self, db_path):
        message = text_message("big", "ü" * 1_000_000)
        with Sessions(db_path) as store:
            store.session().append_message(message)
        with Sessions(db_path) as store:
            assert store.session().get_message("big") == message
