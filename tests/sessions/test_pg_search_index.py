"""The PostgreSQL twin of a conversation's search index finds what the SQLite index finds.

Both engines run side by side over the same operations, through the whole store
(``Sessions`` on an in-memory SQLite database, and on a scope of the tests' own PostgreSQL
server), so what is compared is what ``Session.search`` answers on each.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config import parse_storage
from backend.sessions import Sessions
from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.pg_fts import match_tsquery
from backend.storage.engines import PostgresStorage
from tests.sessions.conftest import text_message

_scope_names = itertools.count()


class Conversation:
    """One conversation store, on one engine."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    def append(self, session_id: str, message_id: str, text: str, role: str = "user") -> None:
        self.sessions.session(session_id).append_message(text_message(message_id, text, role))

    def edit(self, session_id: str, message_id: str, text: str) -> None:
        self.sessions.session(session_id).update_message(text_message(message_id, text))

    def delete(self, session_id: str, message_id: str) -> None:
        self.sessions.session(session_id).delete_messages([message_id])

    def store_echo(self, session_id: str, text: str) -> None:
        """A compaction overlay and the echo of it an old client wrote back as a row."""
        session = self.sessions.session(session_id)
        leaf = session.get_latest_leaf()
        assert leaf is not None
        compaction = session.add_compaction(text, leaf["id"], leaf["id"])
        session.import_message(
            text_message(COMPACTION_PREFIX + compaction.id, text, "assistant"),
            parent_id=leaf["id"],
            created_at=1,
        )

    @property
    def index_built(self) -> bool:
        return self.sessions._store.index.exists

    def search(self, session_id: str, query: str, limit: int = 100) -> list[tuple[str, str, str]]:
        hits = self.sessions.session(session_id).search(query, limit=limit)
        return [(hit.id, hit.role, hit.content) for hit in hits]


@contextmanager
def side_by_side(postgres_url: str) -> Iterator[tuple[Conversation, Conversation]]:
    """A fresh conversation on each engine: (SQLite, PostgreSQL)."""
    storage = PostgresStorage(parse_storage(postgres_url))
    scope = storage.open_scope(f"conversation-{next(_scope_names)}")
    try:
        with Sessions(":memory:") as sqlite, Sessions(scope) as pg:
            yield Conversation(sqlite), Conversation(pg)
    finally:
        scope.close()
        storage.close()


@pytest.fixture
def engines(postgres_url: str) -> Iterator[tuple[Conversation, Conversation]]:
    with side_by_side(postgres_url) as conversations:
        yield conversations


def both(engines, action: str, *args):
    return [getattr(conversation, action)(*args) for conversation in engines]


def test_the_first_search_builds_the_index_from_every_stored_message(engines):
    both(engines, "append", "s", "a", "the deployment failed")
    both(engines, "append", "t", "b", "deployments fail elsewhere")
    sqlite, pg = engines
    assert not pg.index_built
    assert pg.search("s", "deployments fail") == sqlite.search("s", "deployments fail")
    assert pg.search("s", "deployments fail") == [("a", "user", "the deployment failed")]
    assert pg.index_built


def test_writes_after_the_build_keep_the_index_current(engines):
    both(engines, "append", "s", "a", "alpha beta")
    both(engines, "search", "s", "alpha")
    both(engines, "append", "s", "b", "alpha gamma")
    both(engines, "edit", "s", "a", "beta only")
    both(engines, "append", "s", "c", "alpha delta")
    both(engines, "delete", "s", "c")
    sqlite, pg = engines
    assert pg.search("s", "alpha") == sqlite.search("s", "alpha") == [("b", "user", "alpha gamma")]
    assert pg.search("s", "beta") == sqlite.search("s", "beta") == [("a", "user", "beta only")]


def test_a_message_hidden_behind_a_compaction_is_not_found(engines):
    both(engines, "append", "s", "a", "plain words")
    both(engines, "store_echo", "s", "summary words")
    sqlite, pg = engines
    assert pg.search("s", "words") == sqlite.search("s", "words") == [("a", "user", "plain words")]


def test_a_phrase_after_20_000_words_is_found_and_ranks_order_as_bm25(engines):
    both(engines, "append", "s", "long", "filler " * 20_000 + "needle here")
    both(engines, "append", "s", "weak", "apple " + "filler " * 50)
    both(engines, "append", "s", "strong", "apple apple apple")
    sqlite, pg = engines
    assert [hit[0] for hit in pg.search("s", "needle here")] == ["long"]
    assert [hit[0] for hit in pg.search("s", "apple")] == ["strong", "weak"]
    assert [hit[0] for hit in sqlite.search("s", "apple")] == ["strong", "weak"]


def test_the_limit_caps_the_hits_on_both_engines(engines):
    for index in range(5):
        both(engines, "append", "s", f"m{index}", "common word")
    sqlite, pg = engines
    assert len(pg.search("s", "common", 3)) == len(sqlite.search("s", "common", 3)) == 3


def test_a_match_that_is_not_an_fts5_query_this_project_builds_is_refused():
    for match in ("", "plain", '"a" AND "b"', '"a"b"', '"a" "b" OR "c"', '"a"  "b"', '"a" '):
        with pytest.raises(ValueError, match="FTS5 query"):
            match_tsquery(match)
    assert match_tsquery('"say ""hi"""') == "( 'sai' <-> 'hi' )"  # porter: say -> sai


WORDS = ["alpha", "beta", "gamma", "deploy", "deployments", "Café", "cafe", "foo.bar", "x-y"]
operations = st.lists(
    st.tuples(
        st.sampled_from(["append", "edit", "delete", "search"]),
        st.sampled_from(["s", "t"]),
        st.integers(0, 4),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
    ),
    max_size=14,
)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=operations)
def test_any_sequence_of_writes_leaves_both_indexes_finding_the_same_messages(postgres_url, steps):
    with side_by_side(postgres_url) as engines:
        stored: set[tuple[str, str]] = set()
        for action, session_id, number, text in steps:
            key = (session_id, f"m{number}")
            if action == "append" and key not in stored:
                both(engines, "append", session_id, key[1], text)
                stored.add(key)
            elif action == "edit" and key in stored:
                both(engines, "edit", session_id, key[1], text)
            elif action == "delete" and key in stored:
                both(engines, "delete", session_id, key[1])
                stored.discard(key)
            elif action == "search":
                sqlite_hits, pg_hits = both(engines, "search", session_id, text)
                assert sorted(pg_hits) == sorted(sqlite_hits)
        for session_id in ("s", "t"):
            for word in WORDS:
                sqlite_hits, pg_hits = both(engines, "search", session_id, word)
                assert sorted(pg_hits) == sorted(sqlite_hits), (session_id, word)
