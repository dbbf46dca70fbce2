"""Searches do bounded work whatever the input: queries are capped and deduplicated by one
documented rule, snippets look at a bounded window of a message, and a search in progress
never holds the directory's write path (issue 10, item 3)."""

from __future__ import annotations

import itertools
import re
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.chats import SNIPPET_END, SNIPPET_START, Chats, split_snippet
from backend.chats.snippets import SNIPPET_WINDOW_CHARS, snippet_windows, window_spans
from backend.chats.text import any_terms_query, phrase_query, prefix_query
from backend.sessions.search import (
    MAX_QUERY_CHARS,
    MAX_QUERY_SCAN_CHARS,
    MAX_QUERY_WORDS,
    query_words,
)
from tests.chats.conftest import text_message
from tests.support.deadlines import WAIT_S

VOCABULARY = ["alpha", "beta", "gamma", "delta"]
QUOTED_TERM = re.compile(r'"(?:[^"]|"")*"')

# Any text, and the inputs that used to be quadratic: one word pasted thousands of times,
# many distinct words, and long runs of punctuation between them.
any_query = st.one_of(
    st.text(),
    st.builds(
        lambda words, times: " ".join(words) * times,
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4),
        st.integers(min_value=1, max_value=3_000),
    ),
    st.builds(lambda n: " ".join(f"w{i}" for i in range(n)), st.integers(0, 5_000)),
    st.builds(lambda n: "a " + "!? " * n + "b", st.integers(0, 5_000)),
)

ONCE_PER_ENGINE = [HealthCheck.differing_executors]
"""Each property runs once per engine (the package's storage fixture): two test-class
instances call it, which is what that health check warns of, not a flaky executor."""


def terms_of(match: str) -> list[str]:
    """The quoted terms of a built FTS5 query, unquoted."""
    return [term[1:-1].replace('""', '"') for term in QUOTED_TERM.findall(match)]


class TestTheQueryRule:
    @settings(max_examples=200, deadline=None, suppress_health_check=ONCE_PER_ENGINE)
    @given(query=any_query)
    def test_any_input_yields_at_most_the_documented_words_and_characters(self, query):
        words = query_words(query)
        assert len(words) <= MAX_QUERY_WORDS
        assert len(" ".join(words)) <= MAX_QUERY_CHARS
        assert all(any(ch.isalnum() for ch in word) for word in words)

    @settings(max_examples=200, deadline=None, suppress_health_check=ONCE_PER_ENGINE)
    @given(query=any_query)
    def test_title_and_memory_queries_hold_distinct_capped_terms(self, query):
        for build in (prefix_query, any_terms_query):
            match = build(query)
            if match is None:
                assert query_words(query) == []
                continue
            terms = terms_of(match)
            assert 1 <= len(terms) <= MAX_QUERY_WORDS
            assert len({term.casefold() for term in terms}) == len(terms)
            assert len(match) <= 2 * MAX_QUERY_CHARS + 4 * MAX_QUERY_WORDS

    @settings(max_examples=200, deadline=None, suppress_health_check=ONCE_PER_ENGINE)
    @given(query=any_query)
    def test_a_phrase_query_is_capped_the_same_way(self, query):
        match = phrase_query(query)
        if match is None:
            assert query_words(query) == []
        else:
            assert len(match) <= 2 * MAX_QUERY_CHARS + 2
            assert match[1:-1].replace('""', '"').split() == query_words(query)

    def test_the_words_kept_are_the_first_distinct_ones_in_order(self):
        query = "Alpha beta alpha BETA gamma " * 100 + " ".join(f"w{i}" for i in range(50))
        assert query_words(query, distinct=True)[:3] == ["Alpha", "beta", "gamma"]
        assert len(query_words(query, distinct=True)) == MAX_QUERY_WORDS
        assert query_words("one two three") == ["one", "two", "three"]

    def test_a_single_word_longer_than_the_cap_is_cut(self):
        assert query_words("x" * 10_000) == ["x" * MAX_QUERY_CHARS]

    def test_a_word_cut_by_the_end_of_the_scanned_input_is_dropped(self):
        assert query_words("alpha " * 10_000 + "omega", distinct=True) == ["alpha"]
        assert query_words("a" * (MAX_QUERY_SCAN_CHARS - 3) + " betagamma") == ["a" * 256]


@pytest.fixture(scope="module")
def titled(tmp_path_factory):
    """A directory with one chat per non-empty subset of the vocabulary as its title."""
    chats = Chats(tmp_path_factory.mktemp("titles"), "titles")
    titles = {}
    for size in range(1, len(VOCABULARY) + 1):
        for words in itertools.combinations(VOCABULARY, size):
            summary = chats.create_chat(" ".join(words))
            titles[summary.id] = set(words)
    yield chats, titles
    chats.close()


class TestResultsStillMatchTheQuery:
    @settings(max_examples=60, deadline=None, suppress_health_check=ONCE_PER_ENGINE)
    @given(
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=6),
        times=st.integers(min_value=1, max_value=2_000),
    )
    def test_a_repeated_title_query_finds_the_titles_holding_every_word(self, titled, words, times):
        chats, titles = titled
        query = " ".join(words * times)
        found = {summary.id for summary in chats.search_chats(query, limit=100)}
        assert found == {chat_id for chat_id, held in titles.items() if set(words) <= held}

    def test_a_long_phrase_still_finds_the_message_holding_its_first_words(self, chats):
        chat = chats.get_chat(chats.create_chat("c").id)
        words = [f"w{i}" for i in range(MAX_QUERY_WORDS)]
        chat.session.append_message(text_message("m", " ".join(words)))
        query = " ".join(words) + " never stored" * 10_000
        assert [hit.message_id for hit in chats.search_messages(query)] == ["m"]
        assert [hit.message_id for hit in chats.search_messages_fanout(query)] == ["m"]
        assert [r.id for r in chat.session.search(query)] == ["m"]


class TestSnippetsOfHugeMessages:
    @settings(max_examples=200, deadline=None, suppress_health_check=ONCE_PER_ENGINE)
    @given(
        text=st.one_of(
            st.text(alphabet="ab \n", max_size=20_000),
            st.builds(lambda n: "alpha " * n, st.integers(0, 5_000)),
            st.builds(lambda n: "x" * n, st.integers(0, 20_000)),
        )
    )
    def test_snippet_functions_never_see_more_than_one_window_of_any_text(self, text):
        spans = window_spans(text)
        assert snippet_windows(text) == [text[start:end] for start, end in spans]
        assert all(end - start <= SNIPPET_WINDOW_CHARS for start, end in spans)
        # Nothing skipped: they start at 0, end at the end, and each overlaps the previous one.
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        for (start, end), (next_start, next_end) in itertools.pairwise(spans):
            assert start < next_start < end < next_end

    def test_a_huge_message_full_of_the_term_gets_a_short_highlighted_snippet(self, chats):
        chat = chats.get_chat(chats.create_chat("c").id)
        chat.session.append_message(text_message("big", "alpha " * 39_000))  # ~234 KB
        for hits in (chats.search_messages("alpha"), chats.search_messages_fanout("alpha")):
            (hit,) = hits
            assert ("alpha", True) in split_snippet(hit.snippet)
            assert len(hit.snippet) < 200
        indexed, fanned = chats.search_messages("alpha"), chats.search_messages_fanout("alpha")
        assert indexed[0].snippet == fanned[0].snippet

    def test_a_hit_far_into_a_huge_message_is_highlighted_where_it_is(self, chats):
        chat = chats.get_chat(chats.create_chat("c").id)
        text = "filler " * 40_000 + "the needle is here " + "filler " * 1_000
        chat.session.append_message(text_message("big", text))
        (hit,) = chats.search_messages("needle")
        assert f"{SNIPPET_START}needle{SNIPPET_END}" in hit.snippet
        assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
        assert chats.search_messages_fanout("needle")[0].snippet == hit.snippet


class TestSearchesNeverHoldTheWritePath:
    """A search blocked inside its query (an injected wait, holding whatever lock its
    connection holds) must not delay ``create_chat``."""

    @pytest.mark.parametrize(
        "search",
        [
            lambda chats: chats.search_chats("alpha " * 50_000),
            lambda chats: chats.list_chats(search="alpha beta"),
            lambda chats: chats.search_messages("alpha"),
        ],
        ids=["titles", "list", "messages"],
    )
    def test_create_chat_completes_while_a_search_is_in_progress(self, chats, monkeypatch, search):
        chat = chats.get_chat(chats.create_chat("alpha beta").id)
        chat.session.append_message(text_message("m", "alpha"))
        searcher_started, release = threading.Event(), threading.Event()
        searches = chats._scopes.search  # the directory's search connection, on either engine
        scope_type = type(searches)
        original = scope_type.query

        def blocking_query(db, sql, params=()):
            if db is searches and threading.current_thread().name == "searcher":
                with db.lock:  # whatever the search's connection guards stays held
                    searcher_started.set()
                    release.wait()
                    return original(db, sql, params)
            return original(db, sql, params)

        monkeypatch.setattr(scope_type, "query", blocking_query)
        searcher = threading.Thread(target=search, args=(chats,), name="searcher")
        searcher.start()
        created = threading.Event()
        creator = threading.Thread(target=lambda: (chats.create_chat("new"), created.set()))
        try:
            assert searcher_started.wait(WAIT_S)
            creator.start()
            created.wait(WAIT_S)  # a guard against a hang, not a timing assertion
            assert created.is_set(), "create_chat waited for a search"
        finally:
            release.set()
            searcher.join()
            creator.join()
