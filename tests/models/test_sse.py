"""Server-sent events framing, bytes in, ``data`` payloads out, no sockets."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.errors import ModelProtocolError
from backend.models.sse import SSEParser


def parse(*chunks: bytes, max_line_bytes: int = 1024) -> list[str]:
    parser = SSEParser(max_line_bytes=max_line_bytes)
    payloads = []
    for piece in chunks:
        payloads += parser.feed(piece)
    return payloads + parser.close()


STREAM = (
    b'data: {"a": 1}\n\n: keep-alive\n\n'
    b"event: x\ndata: line one\ndata: line two\n\ndata: [DONE]\n\n"
)
PAYLOADS = ['{"a": 1}', "line one\nline two", "[DONE]"]


class TestFraming:
    def test_events_yield_their_data_and_comments_and_other_fields_are_ignored(self):
        assert parse(STREAM) == PAYLOADS

    @pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
    def test_every_line_ending_the_standard_allows_is_understood(self, newline):
        assert parse(STREAM.replace(b"\n", newline)) == PAYLOADS

    @given(st.sets(st.integers(1, len(STREAM) - 1)), st.sampled_from([b"\n", b"\r\n", b"\r"]))
    def test_splitting_the_bytes_anywhere_gives_the_same_events(self, cuts, newline):
        stream = STREAM.replace(b"\n", newline)
        bounds = [0, *sorted(c for c in cuts if c < len(stream)), len(stream)]
        pieces = [stream[a:b] for a, b in itertools.pairwise(bounds)]
        assert parse(*pieces) == PAYLOADS

    def test_a_last_event_without_its_blank_line_is_still_delivered(self):
        assert parse(b"data: [DONE]") == ["[DONE]"]

    def test_a_byte_order_mark_at_the_start_is_skipped(self):
        assert parse("\ufeffdata: x\n\n".encode()) == ["x"]

    def test_a_field_without_a_space_after_the_colon_keeps_its_value(self):
        assert parse(b"data:x\n\n") == ["x"]


class TestBadBytes:
    def test_a_line_longer_than_the_limit_fails_before_its_end_arrives(self):
        parser = SSEParser(max_line_bytes=1000)
        parser.feed(b"data: " + b"x" * 900)
        with pytest.raises(ModelProtocolError, match="longer than 1,000 bytes"):
            parser.feed(b"x" * 200)  # no line end yet: the cap holds while the line grows

    def test_a_complete_line_longer_than_the_limit_fails_too(self):
        with pytest.raises(ModelProtocolError, match="longer than"):
            parse(b"data: " + b"x" * 2000 + b"\n\n", max_line_bytes=1000)

    def test_a_line_of_exactly_the_limit_is_accepted(self):
        assert parse(b"data: " + b"x" * 994 + b"\n\n", max_line_bytes=1000) == ["x" * 994]

    def test_an_event_whose_data_lines_never_end_fails_at_the_same_limit(self):
        parser = SSEParser(max_line_bytes=1000)
        with pytest.raises(ModelProtocolError, match="an event longer than 1,000 bytes"):
            for _ in range(100):
                parser.feed(b"data: " + b"x" * 90 + b"\n")  # short lines, no blank line

    @given(st.lists(st.binary(max_size=40), max_size=8))
    def test_any_bytes_give_text_payloads_or_a_protocol_error(self, chunks):
        parser = SSEParser(max_line_bytes=64)
        try:
            payloads = [p for chunk in chunks for p in parser.feed(chunk)] + parser.close()
        except ModelProtocolError:
            return
        assert all(isinstance(payload, str) for payload in payloads)

    def test_bytes_that_are_not_utf8_are_a_protocol_error(self):
        with pytest.raises(ModelProtocolError, match="UTF-8"):
            parse(b"data: caf\xe9\n\n")

    def test_a_utf8_character_split_across_reads_is_fine(self):
        encoded = "data: café\n\n".encode()
        assert parse(encoded[:9], encoded[9:]) == ["café"]
