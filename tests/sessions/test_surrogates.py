"""A conversation's search index takes any Unicode text, lone UTF-16 surrogates included.

The stored message keeps its text exactly; only the indexed copy follows the storage text rule
(``backend.storage.text``): a pair spelled as two code units is joined, a lone one is U+FFFD.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.errors import InvalidInputError
from backend.sessions import CompactResult, Sessions
from tests.sessions.conftest import ONE_RUN_PER_ENGINE, append_chain, text_message
from tests.support.unicode_text import any_text, word


def json_round_trip(text: str) -> str:
    return json.loads(json.dumps(text))


class TestLoneSurrogatesInIndexedText:
    def test_appending_after_the_index_exists_keeps_the_message_searchable(self, session):
        session.search("warm up")
        session.append_message(text_message("m", "broken \ud83d emoji"))
        assert [r.id for r in session.search("emoji")] == ["m"]
        assert session.get_message("m")["parts"][0]["text"] == "broken \ud83d emoji"

    def test_the_first_search_indexes_messages_stored_before_it(self, session):
        session.append_message(text_message("m", "lonely \udc00 surrogate"))
        assert [r.id for r in session.search("surrogate")] == ["m"]

    def test_updating_a_message_reindexes_it(self, session):
        session.search("warm up")
        session.append_message(text_message("m", "first words"))
        session.update_message(text_message("m", "second \ud800 words"))
        assert [r.id for r in session.search("second")] == ["m"]
        assert session.search("first") == []

    def test_a_pair_spelled_as_two_code_units_is_indexed_as_its_character(self, session):
        session.search("warm up")
        session.append_message(text_message("m", "smile\ud83d\ude00face"))
        assert [r.content for r in session.search("smile")] == ["smile😀face"]
        assert session.get_message("m")["parts"][0]["text"] == "smile😀face"

    def test_a_query_holding_a_lone_surrogate_matches_by_its_well_formed_words(self, session):
        session.append_message(text_message("m", "plain words"))
        assert [r.id for r in session.search("plain \ud800")] == ["m"]
        assert session.search("\udc00") == []


class TestKeysAreRefusedNotMerged:
    def test_an_id_with_a_lone_surrogate_is_a_clear_error(self, session):
        with pytest.raises(InvalidInputError, match="not valid Unicode"):
            session.append_message(text_message("m\ud800"))

    def test_a_role_with_one_is_a_clear_error_that_stores_nothing(self, session):
        with pytest.raises(InvalidInputError, match="lone UTF-16 surrogate"):
            session.append_message({"id": "m", "role": "us\udc00er", "parts": []})
        assert session.get_history() == []


class TestCompactionSummaries:
    def test_a_summary_with_a_lone_surrogate_is_stored_with_a_replacement_character(self, session):
        append_chain(session, "a", "b", "c")
        stored = session.add_compaction("we talked \ud83d a lot", "a", "b")
        assert stored.summary == "we talked \ufffd a lot"
        assert [c.summary for c in session.get_compactions()] == ["we talked \ufffd a lot"]

    def test_a_summariser_returning_one_still_compacts(self, session):
        append_chain(session, "a", "b", "c")
        session.on_compaction(lambda history: CompactResult("a", "b", "sum \udc00 mary"))
        result = session.compact()
        assert result is not None and result.summary == "sum \ufffd mary"
        assert [c.summary for c in session.get_compactions()] == ["sum \ufffd mary"]


class TestAnyTextProperty:
    @settings(max_examples=60, deadline=None, suppress_health_check=[ONE_RUN_PER_ENGINE])
    @given(junk=st.lists(any_text, max_size=4), words=st.lists(word, min_size=1, max_size=4))
    def test_any_text_appends_and_its_well_formed_words_are_found(
        self, tmp_path_factory, junk, words
    ):
        # Words and arbitrary junk (lone surrogates, halves of pairs) separated by spaces.
        text = " ".join(junk + words + junk)
        path = tmp_path_factory.mktemp("surrogates") / "s.sqlite"
        with Sessions(path) as store:
            session = store.session()
            session.append_message(text_message("before", text))
            session.search(words[0])  # builds the index from the stored row (backfill)
            session.append_message(text_message("after", text))  # maintained on write
            # Exact, as far as JSON can tell: it spells a pair and its character alike.
            assert session.get_message("after")["parts"][0]["text"] == json_round_trip(text)
            for found in words:
                assert {r.id for r in session.search(found)} == {"before", "after"}
            for query in junk:
                session.search(query)  # never raises
