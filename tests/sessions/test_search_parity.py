"""Search means the same on PostgreSQL as on SQLite's FTS5 (differential tests, both engines).

The same texts go into an FTS5 table (the project's tokenizers and FTS5 query builders) and a
PostgreSQL table (``backend.sessions.pg_fts`` documents and queries); the same queries must
find the same texts: phrases with stemming and folded diacritics (messages), every word with
the last as a prefix (titles), any word (shared memory). PostgreSQL is the tests' own server.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.chats.snippets import snippets
from backend.chats.text import any_terms_query, prefix_query
from backend.sessions import Sessions, pg_fts
from backend.sessions.fts_tokens import MESSAGES, TITLES, Tokenizer
from backend.sessions.pg_fts import (
    RANK_EXPRESSION,
    all_terms_tsquery,
    any_terms_tsquery,
    document_parts,
    match_tsquery,
    parts_query,
    phrase_tsquery,
    prefix_tsquery,
    tsvector_literal,
)
from backend.sessions.search import phrase_query
from backend.sessions.search_terms import all_terms, query_terms, words_tiers
from backend.storage import Database, well_formed_text
from tests.sessions.conftest import text_message
from tests.support.search_corpus import queries, texts
from tests.support.unicode_text import any_text

_RANK = RANK_EXPRESSION.format(document="tsv", query="%(q)s::tsquery")


class Engines:
    """One FTS5 table and one PostgreSQL table holding the same texts, as numbered documents."""

    def __init__(self, pg: psycopg.Connection, tokenizer: Tokenizer) -> None:
        self.pg = pg
        self.tokenizer = tokenizer
        self.sqlite = Database(":memory:")
        self.sqlite.execute(
            f"CREATE VIRTUAL TABLE docs USING fts5(body, tokenize = '{tokenizer.spec}')"
        )
        pg.execute("CREATE TEMP TABLE docs (doc int NOT NULL, part int NOT NULL, tsv tsvector)")

    def load(self, texts: Sequence[str]) -> None:
        self.sqlite.execute("DELETE FROM docs")
        self.pg.execute("TRUNCATE docs")
        self.sqlite.executemany(
            "INSERT INTO docs (rowid, body) VALUES (?, ?)", list(enumerate(texts))
        )
        rows = [
            (doc, number, part.tsvector)
            for doc, text in enumerate(texts)
            for number, part in enumerate(document_parts(text, self.tokenizer))
        ]
        with self.pg.cursor() as cursor:
            cursor.executemany("INSERT INTO docs VALUES (%s, %s, %s::tsvector)", rows)

    def fts5_ranked(self, match: str | None) -> list[int]:
        if match is None:
            return []
        return [
            row[0]
            for row in self.sqlite.query(
                "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank, rowid", (match,)
            )
        ]

    def pg_ranked(self, tsquery: str | None) -> list[int]:
        if tsquery is None:
            return []
        rows = self.pg.execute(
            f"SELECT doc FROM docs WHERE tsv @@ %(q)s::tsquery "
            f"GROUP BY doc ORDER BY -max({_RANK}), doc",
            {"q": tsquery},
        ).fetchall()
        return [row[0] for row in rows]

    def pg_found_in_parts(self, match: str | None) -> list[int]:
        """What a store finds for a built FTS5 query over texts in parts (``parts_query``)."""
        query = None if match is None else parts_query(match, self.tokenizer)
        if query is None:
            return []
        having = query.having("tsv").replace("?", "%s")
        rows = self.pg.execute(
            f"SELECT doc FROM docs WHERE tsv @@ %s::tsquery GROUP BY doc {having}",
            (query.candidates, *query.every),
        ).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        self.sqlite.close()


@pytest.fixture
def pg(postgres_url: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        yield connection


@pytest.fixture
def messages(pg: psycopg.Connection) -> Iterator[Engines]:
    engines = Engines(pg, MESSAGES)
    yield engines
    engines.close()


@pytest.fixture
def titles(pg: psycopg.Connection) -> Iterator[Engines]:
    engines = Engines(pg, TITLES)
    yield engines
    engines.close()


def _check(
    engines: Engines,
    corpus: list[str],
    query: str,
    fts5_query: Callable[[str], str | None],
    pg_query: Callable[[str], str | None],
) -> None:
    engines.load(corpus)
    assert sorted(engines.pg_ranked(pg_query(query))) == sorted(
        engines.fts5_ranked(fts5_query(query))
    ), (corpus, query)


_SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(corpus=st.lists(texts, min_size=1, max_size=8), query=queries)
def test_a_phrase_finds_the_same_messages_on_both_engines(messages, corpus, query):
    _check(messages, corpus, query, phrase_query, phrase_tsquery)


def words_query(query: str) -> str | None:
    """Every term of ``query`` in any order (the message search's broad tier)."""
    return all_terms(query_terms(query))


@_SETTINGS
@given(corpus=st.lists(texts, min_size=1, max_size=8), query=queries)
def test_every_word_in_any_order_finds_the_same_messages_on_both_engines(messages, corpus, query):
    _check(messages, corpus, query, words_query, all_terms_tsquery)
    for match in words_tiers(query):
        assert sorted(messages.pg_found_in_parts(match)) == sorted(messages.fts5_ranked(match))


@_SETTINGS
@given(corpus=st.lists(texts, min_size=1, max_size=8), query=queries)
def test_any_word_finds_the_same_memory_entries_on_both_engines(messages, corpus, query):
    _check(messages, corpus, query, any_terms_query, any_terms_tsquery)


@_SETTINGS
@given(corpus=st.lists(texts, min_size=1, max_size=8), query=queries)
def test_words_and_a_prefix_find_the_same_titles_on_both_engines(titles, corpus, query):
    _check(titles, corpus, query, prefix_query, prefix_tsquery)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corpus=st.lists(st.text(max_size=40), min_size=1, max_size=6), query=any_text)
def test_any_unicode_text_and_query_find_the_same_messages(messages, corpus, query):
    """Stored texts follow the storage text rule; a query may hold anything (lone surrogates)."""
    _check(
        messages, [well_formed_text(text) for text in corpus], query, phrase_query, phrase_tsquery
    )
    _check(
        messages,
        [well_formed_text(text) for text in corpus],
        query,
        any_terms_query,
        any_terms_tsquery,
    )


_session_ids = itertools.count()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corpus=st.lists(texts, min_size=1, max_size=6), query=queries)
def test_a_conversation_s_own_search_finds_what_postgresql_finds(
    messages, tmp_path_factory, corpus, query
):
    """The real SQLite path (``Session.search``, its lazily built index) against PostgreSQL."""
    messages.load(corpus)
    path = tmp_path_factory.getbasetemp() / "parity.sqlite"
    with Sessions(path) as store:
        session = store.session(f"s{next(_session_ids)}")
        for index, text in enumerate(corpus):
            session.append_message(text_message(f"m{index}", text))
        found = {int(hit.id[1:]) for hit in session.search(query, limit=None)}
    assert found == set(messages.pg_ranked(phrase_tsquery(query))), (corpus, query)


@settings(max_examples=300, deadline=None)
@given(query=st.one_of(queries, any_text))
def test_a_store_reads_the_fts5_query_it_receives_as_the_tsquery_of_the_same_words(query):
    """Stores get built FTS5 queries; reading one back gives the tsquery built from the words."""
    assert _read_back(phrase_query(query), MESSAGES) == phrase_tsquery(query)
    assert _read_back(any_terms_query(query), MESSAGES) == any_terms_tsquery(query)
    assert _read_back(prefix_query(query), TITLES) == prefix_tsquery(query)
    assert _read_back(words_query(query), MESSAGES) == all_terms_tsquery(query)


def _read_back(match: str | None, tokenizer: Tokenizer) -> str | None:
    return None if match is None else match_tsquery(match, tokenizer)


# ── where PostgreSQL's own parser would read differently ────────────


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("some.words", "some words"),
        ("some-words", "some words"),
        ("foo.bar.com", "bar"),
        ("Café plans", "cafe"),
        ("the deployment failed", "deployments fail"),
    ],
)
def test_texts_postgresql_s_parser_splits_otherwise_are_found_as_fts5_finds_them(
    messages, text, query
):
    messages.load([text, "unrelated"])
    assert messages.pg_ranked(phrase_tsquery(query)) == messages.fts5_ranked(phrase_query(query))
    assert messages.pg_ranked(phrase_tsquery(query)) == [0]


def test_a_phrase_after_20_000_words_is_found(messages):
    text = "filler " * 20_000 + "needle in the haystack"
    messages.load([text])
    assert len(document_parts(text)) > 2
    assert messages.pg_ranked(phrase_tsquery("needle in the haystack")) == [0]
    assert messages.fts5_ranked(phrase_query("needle in the haystack")) == [0]


def test_a_phrase_at_a_word_s_300th_occurrence_is_found(messages):
    """A lexeme keeps 256 positions in a tsvector: parts never hold it more often."""
    text = "the end " * 299 + "the needle"
    messages.load([text])
    assert messages.pg_ranked(phrase_tsquery("the needle")) == [0]


def test_a_phrase_across_the_end_of_a_part_is_found(messages):
    words = [f"w{index}" for index in range(9_000)]
    messages.load([" ".join(words)])
    for at in (7_870, 7_990, 7_999, 8_000):
        assert messages.pg_ranked(phrase_tsquery(" ".join(words[at : at + 16]))) == [0]


def test_a_token_longer_than_a_lexeme_may_be_is_found_by_prefix_only_as_in_fts5(titles):
    long_token = "é" * 3_000
    titles.load([f"{long_token} tail", "other"])
    for query in ("e" * 200, "e" * 256, "e" * 255 + " tail", long_token):
        assert titles.pg_ranked(prefix_tsquery(query)) == titles.fts5_ranked(prefix_query(query))
    assert titles.pg_ranked(prefix_tsquery("e" * 256)) == [0]


def test_a_query_without_tokens_finds_nothing_on_both_engines(messages):
    messages.load(["some words"])
    for query in ("", "   ", '"', "*", "—", "\u0301"):
        assert phrase_tsquery(query) is None or messages.pg_ranked(phrase_tsquery(query)) == []
        assert messages.fts5_ranked(phrase_query(query)) == []


# ── ranking and snippets ────────────────────────────────────────────


@pytest.mark.parametrize(
    ("texts", "query"),
    [
        (["apple " + "filler " * 50, "apple apple apple"], "apple"),
        (["tea and a very long text " * 20, "tea " * 5], "tea"),
    ],
    ids=["tests/sessions/test_search.py", "tests/chats/test_message_search.py"],
)
def test_the_rank_fixtures_the_tests_pin_order_as_bm25_orders_them(messages, texts, query):
    messages.load(texts)
    assert messages.pg_ranked(phrase_tsquery(query)) == messages.fts5_ranked(phrase_query(query))
    assert messages.pg_ranked(phrase_tsquery(query)) == [1, 0]


def test_snippets_of_the_texts_postgresql_returns_carry_the_same_markers(messages):
    texts = ["say <b>hello</b> world", "nothing", "hello " + "long text " * 1_000]
    messages.load(texts)
    found = messages.pg_ranked(phrase_tsquery("hello"))
    match = phrase_query("hello")
    assert match is not None
    from_pg = snippets([texts[doc] for doc in found], match)
    from_fts5 = snippets([texts[doc] for doc in messages.fts5_ranked(match)], match)
    assert sorted(from_pg) == sorted(from_fts5)
    assert "say <b>\ue000hello\ue001</b> world" in from_pg


def test_a_lexeme_with_a_quote_or_a_backslash_is_quoted_not_parsed(pg):
    """FTS5 tokens never hold them; the literals stay safe if one ever did."""
    lexemes = ["it's", "a\\b", "x' | 'y", "'"]
    row = pg.execute("SELECT tsvector_to_array(%s::tsvector)", (tsvector_literal(lexemes),))
    assert sorted(row.fetchone()[0]) == sorted(lexemes)


_PART_WORDS = [f"w{index}" for index in range(40)] + ["deploy", "deployed", "a"]


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    corpus=st.lists(
        st.lists(st.sampled_from(_PART_WORDS), min_size=13, max_size=60), min_size=1, max_size=3
    ),
    data=st.data(),
)
def test_texts_cut_into_many_small_parts_find_every_phrase_fts5_finds(
    messages, monkeypatch, corpus, data
):
    """The part rule at a small scale: parts of 12 tokens, a lexeme at most 7 times in one,
    overlaps of 5 (phrases of up to 6 tokens), so most texts here span several parts; the
    phrase asked is a piece of one of the texts, wherever it falls."""
    monkeypatch.setattr(pg_fts, "PART_TOKENS", 12)
    monkeypatch.setattr(pg_fts, "MAX_LEXEME_POSITIONS", 7)
    monkeypatch.setattr(pg_fts, "OVERLAP_TOKENS", 5)
    words = data.draw(st.sampled_from(corpus))
    start = data.draw(st.integers(0, len(words) - 1))
    length = data.draw(st.sampled_from([1, 2, 5, 6, 6, 6]))
    query = " ".join(words[start : start + length])
    _check(messages, [" ".join(text) for text in corpus], query, phrase_query, phrase_tsquery)
    # Words in any order may lie in different parts: a store still finds what FTS5 finds.
    scattered = " ".join(data.draw(st.lists(st.sampled_from(_PART_WORDS), min_size=1, max_size=4)))
    for match in (*words_tiers(scattered), words_query(scattered)):
        assert sorted(messages.pg_found_in_parts(match)) == sorted(messages.fts5_ranked(match))
