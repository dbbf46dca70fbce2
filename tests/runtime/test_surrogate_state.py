"""Issue 10: session state holding a lone UTF-16 surrogate is stored and read back exactly.

State is exact JSON like a stored message: a string UTF-8 cannot carry is escaped (``\\ud800``)
instead of failing the write (or the whole run that proposed it). End to end:
``tests/runtime/test_surrogate_streams.py::TestToolArgumentsCarryingSurrogates``.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from backend.runtime.state_schema import check_state
from tests.support.unicode_text import any_text


class TestStateEncoding:
    def test_well_formed_documents_keep_their_readable_encoding(self):
        assert check_state({"note": "héllo 😀"}, None) == '{"note":"héllo 😀"}'

    @given(st.dictionaries(st.sampled_from("abcd"), st.lists(any_text, max_size=3), max_size=4))
    def test_any_text_encodes_to_utf8_json_that_reads_back_as_the_same_data(self, data):
        encoded = check_state(data, None, max_bytes=1 << 20)
        encoded.encode("utf-8")
        # The same data, as far as JSON can tell (it spells a pair and its character alike).
        assert json.loads(encoded) == json.loads(json.dumps(data))
