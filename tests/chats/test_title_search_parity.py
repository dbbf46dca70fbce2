"""Title search means the same on PostgreSQL as on SQLite: the same chats, in the same order.

Random small directories (titles from a vocabulary with prefixes of one another, accents,
dotted and hyphenated words, repeats; some chats renamed, soft-deleted or archived) are
built identically on SQLite's FTS5 index and on the PostgreSQL twin, and every query must
give the same list: FTS5's bm25 order, ties newest first (``backend.chats.pg_title_rank``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from backend.chats.chat_records import ChatRecordStore
from backend.chats.directory_storage import record_store_for
from backend.chats.pg_title_rank import occurrences, phrases_of
from backend.chats.text import prefix_query
from backend.config import PostgresLocation
from backend.storage import Database
from tests.support.storage_engines import directory_scope

VOCABULARY = (
    "lisbon", "lis", "lisboa", "trip", "tripod", "café", "cafe", "CAFÉ", "porto",
    "foo.bar", "some-words", "notes", "a", "b", "résumé", "trip-trip",
)  # fmt: skip
QUERIES = ("lis", "trip", "cafe", "porto b", "a", "foo", "words some", "trip lis", "resume", "b")
CORPORA = 30


def fill(stores: list[ChatRecordStore], rnd: random.Random) -> None:
    """The same random history on every store."""
    clock = 0
    for number in range(rnd.randint(3, 12)):
        title = " ".join(rnd.choice(VOCABULARY) for _ in range(rnd.randint(1, 7)))
        clock += rnd.randint(0, 2)  # timestamps tie on purpose
        action, renamed = rnd.random(), f"{title} {rnd.choice(VOCABULARY)}"
        for store in stores:
            with store.db.transaction():
                record = store.insert(f"chat{number:02d}", title, clock)
                if action < 0.15:
                    store.rename(record, renamed)
                elif action < 0.3:
                    store.soft_delete(record, clock)
                elif action < 0.4:
                    store.archive(record, clock)


@pytest.fixture
def postgresql(storage) -> PostgresLocation:
    if not isinstance(storage, PostgresLocation):
        pytest.skip("compares PostgreSQL with SQLite")
    return storage


def test_every_query_gives_the_same_chats_in_the_same_order(postgresql, tmp_path: Path):
    rnd = random.Random(26)
    differences = []
    for corpus in range(CORPORA):
        sqlite = record_store_for(Database(":memory:"))
        with directory_scope(postgresql, tmp_path / f"person{corpus}") as scope:
            postgres = record_store_for(scope)
            fill([sqlite, postgres], random.Random(rnd.random()))
            for query in QUERIES:
                match = prefix_query(query)
                assert match is not None
                expected = [s.id for s in sqlite.search_titles(match, 50)]
                found = [s.id for s in postgres.search_titles(match, 50)]
                if found != expected:
                    differences.append((corpus, query, expected, found))
                assert [s.id for s in postgres.search_titles(match, 2)] == expected[:2]
        sqlite.db.close()
    assert differences == []


class TestPhraseOccurrences:
    """FTS5 counts phrase instances: a prefix phrase every token it fits, a phrase of several
    tokens each run of them in order."""

    def test_a_prefix_counts_every_token_it_fits(self):
        (phrase,) = phrases_of('"tri"*')
        assert occurrences(phrase, ["trip", "tripod", "a", "tri", "atrip"]) == 3

    def test_a_phrase_counts_runs_in_order_its_last_token_as_a_prefix(self):
        (phrase,) = phrases_of('"foo.ba"*')
        assert phrase.tokens == ("foo", "ba")
        assert occurrences(phrase, ["foo", "bar", "ba", "foo", "ba", "bar", "foo"]) == 2
        (whole,) = phrases_of('"foo.ba"')
        assert occurrences(whole, ["foo", "bar", "foo", "ba"]) == 1

    def test_quotes_inside_a_phrase_read_back(self):
        assert [p.match for p in phrases_of('"say ""hi"""* "x"')] == ['"say ""hi"""*', '"x"']
