"""A streaming reply's text is held in pieces: a flush re-sends the newest piece, not the reply.

``chatsapp.live.stream_pieces.append`` returns the levels an appended text changes; those are the
vars Reflex sends to every watching tab. The page shows the pieces joined, highest level first.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatsapp.live.stream_pieces import BASE_CHARS, PIECE_LEVELS, append, capacity, joined


def empty() -> list[str]:
    return [""] * PIECE_LEVELS


def stream(chunks: list[str]) -> tuple[list[str], list[dict[int, str]]]:
    """Append ``chunks`` one by one; the final pieces, and each append's changes."""
    pieces = empty()
    sent = []
    for chunk in chunks:
        changes = append(pieces, chunk)
        for level, value in changes.items():
            pieces[level] = value
        sent.append(changes)
    return pieces, sent


def words(count: int) -> list[str]:
    """A reply streamed three words a flush, as a model at ~50 words/s fills a 40 ms flush."""
    text = [f"word{n % 97} " for n in range(count)]
    return ["".join(text[i : i + 3]) for i in range(0, count, 3)]


class TestThePiecesHoldTheWholeReply:
    @given(st.lists(st.text(max_size=900), max_size=80))
    def test_joined_pieces_are_every_appended_text_in_order(self, chunks: list[str]) -> None:
        pieces, _sent = stream(chunks)
        assert joined(pieces) == "".join(chunks)

    @given(st.lists(st.text(min_size=1, max_size=2000), max_size=80))
    def test_no_level_holds_more_than_its_capacity(self, chunks: list[str]) -> None:
        pieces, _sent = stream(chunks)
        for level, piece in enumerate(pieces):
            limit = capacity(level)
            assert limit is None or len(piece) <= limit, (level, len(piece))

    @given(st.lists(st.text(max_size=900), max_size=80))
    def test_only_levels_whose_text_changes_are_sent(self, chunks: list[str]) -> None:
        pieces = empty()
        for chunk in chunks:
            changes = append(pieces, chunk)
            assert all(pieces[level] != value for level, value in changes.items())
            for level, value in changes.items():
                pieces[level] = value

    def test_a_lone_surrogate_half_stays_next_to_its_other_half(self) -> None:
        pieces, _sent = stream(["a" * BASE_CHARS + "\ud83d", "\ude00 done"])
        assert joined(pieces) == "a" * BASE_CHARS + "\ud83d\ude00 done"

    def test_appending_nothing_changes_nothing(self) -> None:
        assert append(empty(), "") == {}

    def test_pieces_of_the_wrong_shape_are_refused(self) -> None:
        with pytest.raises(ValueError, match="pieces"):
            append(["", ""], "text")


class TestAFlushReSendsLittle:
    def test_a_short_reply_is_one_piece_sent_whole_as_before(self) -> None:
        _pieces, sent = stream(words(90))  # ~600 characters: the offline assistant's size
        assert all(set(changes) <= {0, 1} for changes in sent)
        assert sum(1 for changes in sent if 1 in changes) <= 1

    def test_a_flush_that_merges_nothing_sends_at_most_the_newest_piece(self) -> None:
        _pieces, sent = stream(words(3000))
        plain = [changes for changes in sent if set(changes) == {0}]
        assert len(plain) > 0.8 * len(sent)
        assert max(len(changes[0]) for changes in plain) <= BASE_CHARS

    def test_a_long_reply_costs_a_fraction_of_re_sending_the_whole_text(self) -> None:
        chunks = words(3000)
        _pieces, sent = stream(chunks)
        pieces_bytes = sum(len(value) for changes in sent for value in changes.values())
        whole_text_bytes = sum(len("".join(chunks[: n + 1])) for n in range(len(chunks)))
        assert pieces_bytes * 20 < whole_text_bytes, (pieces_bytes, whole_text_bytes)

    @given(st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=200))
    def test_text_is_re_sent_at_most_once_per_level_it_climbs(self, chunks: list[str]) -> None:
        _pieces, sent = stream(chunks)
        merged = sum(len(v) for changes in sent for level, v in changes.items() if level > 0)
        assert merged <= len("".join(chunks)) * (PIECE_LEVELS - 1)
