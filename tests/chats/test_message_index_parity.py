"""Cross-chat search means the same on PostgreSQL as on SQLite (differential, both engines).

Random chats (some deleted) hold random messages; the same messages go into the SQLite
directory's FTS5 index and into a PostgreSQL directory scope's index, through the stores
themselves (``MessageIndexStore`` and ``PgMessageIndexStore``); the same random queries must
find the same messages of the same live chats, with the same snippets, in an order both
engines agree on wherever bm25 has one:

* a hit holding the searched word more often in a text no longer than another's ranks before
  it on both engines (PostgreSQL's rank is not bm25, see ``backend.sessions.pg_fts``, but it
  agrees on every pair these two measures order the same way);
* hits equal in both measures come in chat id, then message id order on both engines.

Texts and queries are the vocabulary of ``tests/sessions/test_search_parity.py``: stems,
diacritics, compounds, dotted names and FTS5 operators.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.chats.directory_storage import twin_of
from backend.chats.index_store import MessageIndexStore
from backend.chats.text import phrase_query
from backend.chats.values import ChatHit
from backend.config import PostgresLocation, parse_storage
from backend.sessions.fts_tokens import MESSAGES
from backend.sessions.search import query_words
from backend.storage import Database, well_formed_text
from backend.storage.engines import PostgresStorage
from tests.chats.directory_chats import DirectoryChats
from tests.support.search_corpus import queries, texts

# Their own ``chats`` table (tests/chats/directory_chats.py) in place of the application's.
pytestmark = pytest.mark.fresh_schema

LIMIT = 1_000
"""Above any corpus here: every hit is compared."""


@dataclass(frozen=True)
class Chat:
    chat_id: str
    deleted: bool
    messages: list[str]


@st.composite
def chats(draw: st.DrawFn) -> list[Chat]:
    """Chats whose messages are drawn from a few texts, so equal hits across chats abound."""
    pool = draw(st.lists(texts, min_size=1, max_size=4))
    return draw(
        st.lists(
            st.builds(
                Chat,
                chat_id=st.text("abcXYZ-_é0", min_size=1, max_size=4),
                deleted=st.booleans(),
                messages=st.lists(st.sampled_from(pool), min_size=1, max_size=4),
            ),
            min_size=1,
            max_size=5,
            unique_by=lambda chat: chat.chat_id,
        )
    )


class BothEngines:
    """A fresh SQLite directory and a fresh PostgreSQL directory scope per example."""

    def __init__(self, location: PostgresLocation) -> None:
        self.storage = PostgresStorage(location)
        self._names = itertools.count()

    def load(self, corpus: list[Chat]) -> tuple[MessageIndexStore, MessageIndexStore]:
        sqlite = Database(":memory:")
        postgres = self.storage.open_scope(f"/parity/{next(self._names)}/directory.sqlite")
        stores = []
        for db in (sqlite, postgres):
            rows = DirectoryChats(db)
            store = twin_of(MessageIndexStore, db)(db)
            with db.transaction():
                for num, chat in enumerate(corpus, start=1):
                    rows.add(num, chat.chat_id)
                    if chat.deleted:
                        rows.delete(num)
                    store.apply(num, {f"m{i}": text for i, text in enumerate(chat.messages)})
            stores.append(store)
        return stores[0], stores[1]

    def close(self) -> None:
        self.storage.close()


@pytest.fixture
def engines(postgres_url: str) -> Iterator[BothEngines]:
    location = parse_storage(postgres_url)
    assert isinstance(location, PostgresLocation)
    both = BothEngines(location)
    yield both
    both.close()


def _measures(text: str, phrase: list[str]) -> tuple[int, int]:
    """``(occurrences of the phrase, tokens)`` of a text: what bm25 weighs for one phrase."""
    tokens = MESSAGES.tokens(text)
    width = len(phrase)
    found = sum(tokens[at : at + width] == phrase for at in range(len(tokens) - width + 1))
    return found, len(tokens)


def _agreed_order(hits: list[ChatHit], corpus: list[Chat], phrase: list[str]) -> None:
    """Every pair both measures order (or tie) comes in that order (or chat/message order)."""
    texts_of = {chat.chat_id: chat.messages for chat in corpus}
    measures = [_measures(texts_of[hit.chat_id][int(hit.message_id[1:])], phrase) for hit in hits]
    for first, second in itertools.combinations(range(len(hits)), 2):
        (f1, n1), (f2, n2) = measures[first], measures[second]
        if (f1, n1) == (f2, n2):
            a, b = hits[first], hits[second]
            assert (a.chat_id, a.message_id) < (b.chat_id, b.message_id), (hits, measures)
        else:
            assert not (f2 >= f1 and n2 <= n1), (hits, measures)  # the second is no better


# psycopg_pool draws each new connection's lifetime from ``random`` in its own threads, which
# hypothesis would take for a strategy using ``random``.
@pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(corpus=chats(), query=queries)
def test_a_search_across_chats_finds_the_same_hits_on_both_engines(engines, corpus, query):
    sqlite, postgres = engines.load(corpus)
    match = phrase_query(query)
    if match is None:
        return
    from_sqlite = sqlite.search(match, LIMIT)
    from_postgres = postgres.search(match, LIMIT)
    found = {(h.chat_id, h.message_id): h.snippet for h in from_postgres}
    assert found == {(h.chat_id, h.message_id): h.snippet for h in from_sqlite}, (corpus, query)
    live = {chat.chat_id for chat in corpus if not chat.deleted}
    assert {chat_id for chat_id, _ in found} <= live
    phrase = MESSAGES.tokens(well_formed_text(" ".join(query_words(query))))
    _agreed_order(from_sqlite, corpus, phrase)
    if len(phrase) == 1:  # ts_rank weighs a phrase's words apart, bm25 the phrase (pg_fts)
        _agreed_order(from_postgres, corpus, phrase)
