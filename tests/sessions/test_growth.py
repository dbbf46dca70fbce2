"""A growing message keeps what it stored and writes what it added (backend/sessions/growth.py):
the rule PostgreSQL stores streamed replies by, so a checkpoint never rewrites the reply."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from backend.sessions.growth import GROWTH_MIN_CHARS, MAX_GROWN_SLICES, grown_slices
from tests.sessions.conftest import text_message

OPENING = '{"id":"r","parts":[{"text":"' + "x" * GROWTH_MIN_CHARS
CLOSING = '"}],"metadata":{"status":"running"}}'


def rejoined(stored: list[str], content: str) -> list[str]:
    grown = grown_slices(stored, content)
    assert grown is not None
    first, pieces = grown
    assert "".join(stored[:first] + pieces) == content
    return stored[:first] + pieces


def test_a_first_growth_cuts_the_one_slice_into_what_stays_what_is_new_and_the_closing():
    before = OPENING + " one" + CLOSING
    after = OPENING + " one two" + CLOSING
    assert rejoined([before], after) == [OPENING + " one", " two", CLOSING]


def test_later_growth_keeps_every_slice_but_the_closing_and_writes_only_what_it_added():
    slices = [OPENING + " one", " two", CLOSING]
    grown = grown_slices(slices, OPENING + " one two three" + CLOSING)
    assert grown == (2, [" three", CLOSING])


def test_a_short_or_shrinking_message_is_written_whole():
    assert grown_slices(['{"a":"one"}'], '{"a":"one two"}') is None
    assert grown_slices([OPENING + " one two" + CLOSING], OPENING + CLOSING) is None


def test_a_changed_beginning_is_written_whole():
    assert grown_slices([OPENING + CLOSING], "!" + OPENING[1:] + " more" + CLOSING) is None


def test_past_the_slice_bound_the_message_is_written_whole():
    slices = [OPENING, *[f" w{n}" for n in range(MAX_GROWN_SLICES - 2)], CLOSING]
    assert grown_slices(slices, "".join(slices[:-1]) + " next" + CLOSING) is None


@given(
    st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=8),
    st.text(max_size=40),
)
def test_any_growth_rejoins_to_the_new_content(words, tail):
    stored = [OPENING + CLOSING]
    text = ""
    for word in words:
        text += word
        content = OPENING + text + tail + CLOSING
        stored = rejoined(stored, content)


def test_a_streamed_reply_reads_back_whole_at_every_checkpoint(session):
    words = [f"word{n}" for n in range(2_000)]
    session.append_message(text_message("r", "", role="assistant"))
    for end in range(100, 2_001, 100):
        message = text_message("r", " ".join(words[:end]), role="assistant")
        message["metadata"] = {"status": "running" if end < 2_000 else "completed"}
        session.update_message(message)
        assert session.get_message("r") == message
    assert [m["id"] for m in session.get_history()] == ["r"]


def test_on_postgresql_a_checkpoint_writes_the_row_head_and_two_short_slices(session):
    def reply(words: int) -> dict:
        message = text_message("r", " ".join(f"w{n}" for n in range(words)), role="assistant")
        message["metadata"] = {"status": "running"}
        return message

    session.append_message(reply(2_000))
    session.update_message(reply(2_100))  # the first growth cuts the row's one slice
    before = session._db.stats.snapshot()
    session.update_message(reply(2_200))
    spent = session._db.stats - before
    if session._db.engine_kind == "sqlite":
        assert spent.rows_written == 1  # the row, whole
    else:  # the head (slice 0 kept), the old closing slice now new words, a new closing slice
        assert spent.rows_written == 3
    assert session.get_message("r") == reply(2_200)
