"""Full-text search: built lazily by the first search, maintained after, safe for any query."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.sessions import SearchResult, Sessions
from tests.sessions.conftest import append_chain, text_message


def fts_exists(session) -> bool:
    """Whether the conversation's search index was built (read from the database)."""
    return session._store.index._table_exists()


class TestLazyIndex:
    def test_appends_never_create_the_index(self, session):
        append_chain(session, "a", "b")
        assert not fts_exists(session)

    def test_the_first_search_builds_it_with_every_stored_message(self, session):
        session.append_message(text_message("plain", "the quick brown fox"))
        session.append_message(text_message("other", "a lazy dog"))
        assert [r.id for r in session.search("quick brown")] == ["plain"]
        assert fts_exists(session)

    def test_the_backfill_includes_chunked_messages(self, session):
        session.append_message(text_message("big", "needle " + "hay " * 600_000))
        assert [r.id for r in session.search("needle")] == ["big"]

    def test_the_backfill_covers_every_session_of_the_file(self, sessions):
        sessions.session("a").append_message(text_message("x", "shared words"))
        sessions.session("b").append_message(text_message("y", "shared words"))
        assert [r.id for r in sessions.session("a").search("shared")] == ["x"]
        assert [r.id for r in sessions.session("b").search("shared")] == ["y"]

    def test_the_index_persists_across_reopening(self, db_path):
        with Sessions(db_path) as store:
            store.session().append_message(text_message("a", "persistent phrase"))
            store.session().search("phrase")
        with Sessions(db_path) as store:
            store.session().append_message(text_message("b", "persistent phrase again"))
            assert {r.id for r in store.session().search("persistent phrase")} == {"a", "b"}


class TestMaintainedIndex:
    def test_finds_appends_made_after_the_index_exists(self, session):
        session.search("warm up")
        session.append_message(text_message("new", "fresh content"))
        assert [r.id for r in session.search("fresh")] == ["new"]

    def test_an_update_replaces_the_indexed_text(self, session):
        session.append_message(text_message("m", "a lazy dog"))
        session.search("dog")
        session.update_message(text_message("m", "an alert cat"))
        assert session.search("lazy dog") == []
        assert [r.id for r in session.search("alert cat")] == ["m"]

    def test_a_deleted_message_is_not_found(self, session):
        append_chain(session, "a")
        session.search("x")
        session.delete_messages(["a"])
        assert session.search("text of a") == []

    def test_a_cleared_session_is_not_found(self, session):
        append_chain(session, "a")
        session.search("x")
        session.clear_messages()
        assert session.search("text") == []

    def test_imports_are_indexed(self, session):
        session.search("x")
        session.import_message(text_message("i", "imported words"), parent_id=None, created_at=1)
        assert [r.id for r in session.search("imported")] == ["i"]

    def test_only_text_parts_are_indexed(self, session):
        session.append_message(
            {
                "id": "m",
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "text": "secret reasoning"},
                    {"type": "tool-x", "toolCallId": "c", "input": {"q": "toolword"}},
                    {"type": "text", "text": "visible"},
                    {"type": "text", "text": "answer"},
                ],
            }
        )
        assert session.search("reasoning") == []
        assert session.search("toolword") == []
        (hit,) = session.search("visible answer")
        assert hit.content == "visible answer"


class TestQueries:
    def test_returns_id_role_indexed_text_and_a_bm25_rank(self, session):
        session.append_message(text_message("m", "hello search world", role="assistant"))
        (hit,) = session.search("search")
        assert isinstance(hit, SearchResult)
        assert (hit.id, hit.role, hit.content) == ("m", "assistant", "hello search world")
        assert isinstance(hit.rank, float)

    def test_results_are_ordered_by_rank_best_first(self, session):
        session.append_message(text_message("weak", "apple " + "filler " * 50))
        session.append_message(text_message("strong", "apple apple apple"))
        results = session.search("apple")
        assert [r.id for r in results] == ["strong", "weak"]
        assert results[0].rank <= results[1].rank

    def test_the_limit_caps_the_results(self, session):
        for index in range(30):
            session.append_message(text_message(f"m{index}", "common word"))
        assert len(session.search("common")) == 20
        assert len(session.search("common", limit=5)) == 5
        assert session.search("common", limit=0) == []

    def test_a_limit_beyond_sqlite_integers_means_no_limit(self, session):
        for index in range(3):
            session.append_message(text_message(f"m{index}", "common word"))
        assert len(session.search("common", limit=2**63)) == 3
        assert len(session.search("common", limit=2**100)) == 3

    def test_a_limit_of_none_is_the_default(self, session):
        for index in range(30):
            session.append_message(text_message(f"m{index}", "common word"))
        assert len(session.search("common", limit=None)) == 20

    @pytest.mark.parametrize("limit", ["5", 2.5, True])
    def test_a_limit_that_is_not_an_integer_is_a_clear_type_error(self, session, limit):
        with pytest.raises(TypeError, match="limit must be an integer"):
            session.search("common", limit=limit)

    def test_a_query_is_a_phrase_not_a_bag_of_words(self, session):
        session.append_message(text_message("a", "brown quick"))
        session.append_message(text_message("b", "quick brown"))
        assert [r.id for r in session.search("quick brown")] == ["b"]

    def test_stemming_matches_word_forms(self, session):
        session.append_message(text_message("a", "the deployment failed"))
        assert [r.id for r in session.search("deployments fail")] == ["a"]

    def test_an_empty_or_blank_query_returns_nothing(self, session):
        append_chain(session, "a")
        assert session.search("") == []
        assert session.search("   \n\t") == []

    def test_operators_and_quotes_are_text_not_syntax(self, session):
        session.append_message(text_message("a", 'say "hello" AND NEAR(x) * col:val'))
        for query in ['"hello"', "AND", "NEAR(x)", "*", "col:val", '"', "a OR b", "(", "^x", "-x"]:
            session.search(query)  # never raises
        assert [r.id for r in session.search('say "hello"')] == ["a"]
        assert session.search("hello OR nothing") == []

    def test_a_nul_character_in_a_query_is_safe(self, session):
        append_chain(session, "a")
        assert session.search("text\x00of") == session.search("text of")

    @settings(max_examples=150, deadline=None)
    @given(query=st.text())
    def test_any_string_is_a_safe_query(self, tmp_path_factory, query):
        path = tmp_path_factory.mktemp("fuzz") / "s.sqlite"
        with Sessions(path) as store:
            store.session().append_message(text_message("a", "some words"))
            results = store.session().search(query)
        # Safe means: a list of hits on stored messages only, with their stored text, and a
        # query without a single word character (only punctuation, space) finds nothing.
        assert isinstance(results, list)
        assert [(r.id, r.content) for r in results] in ([], [("a", "some words")])
        if not any(ch.isalnum() for ch in query):
            assert results == []

    @settings(max_examples=100, deadline=None)
    @given(
        words=st.lists(st.sampled_from(["some", "words", "SOME", "Words"]), min_size=1, max_size=2),
        separator=st.text(alphabet=' \t\n.,;:!?"()*^-+', min_size=1, max_size=4),
    )
    def test_the_message_s_words_with_any_punctuation_between_them_find_it(
        self, tmp_path_factory, words, separator
    ):
        path = tmp_path_factory.mktemp("fuzz") / "s.sqlite"
        with Sessions(path) as store:
            store.session().append_message(text_message("a", "some words"))
            query = separator.join(words)
            expected = [w.lower() for w in words] in (["some"], ["words"], ["some", "words"])
            assert [r.id for r in store.session().search(query)] == (["a"] if expected else [])
