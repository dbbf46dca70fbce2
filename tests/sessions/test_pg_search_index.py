"""The PostgreSQL twin of a conversation's search index finds what the SQLite index finds.

Both indexes run side by side over the same operations: the SQLite ``SearchIndex`` on a
``Database``, ``PgSearchIndex`` on a ``PostgresScope`` of the tests' own server. Until the
sessions store has its PostgreSQL twin, each engine gets the two tables the index reads of it,
with the columns it reads (``session_messages``: ids, role, stored content; ``session_compactions``:
ids); the index code under test is the real one on both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.config import parse_storage
from backend.sessions.encoding import encode_message
from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.pg_fts import match_tsquery
from backend.sessions.pg_search_index import PgSearchIndex
from backend.sessions.search import indexed_text, phrase_query
from backend.sessions.search_index import SearchIndex
from backend.storage import Database
from backend.storage.postgres import PostgresEngine, PostgresScope
from tests.sessions.conftest import text_message

_TABLES = (
    "CREATE TABLE session_messages (session_id text NOT NULL, id text NOT NULL, "
    "role text NOT NULL, content text NOT NULL, content_chunks integer NOT NULL DEFAULT 0, "
    "PRIMARY KEY (session_id, id))",
    "CREATE TABLE session_compactions (session_id text NOT NULL, id text NOT NULL, "
    "PRIMARY KEY (session_id, id))",
)


class Conversation:
    """One conversation's message rows and its search index, on one engine."""

    def __init__(self, db, index_class: type[SearchIndex]) -> None:
        self.db = db
        for statement in _TABLES:
            db.execute(statement)
        # rows and compactions serve chunked backfills and searchable_texts, not used here.
        self.index = index_class(db, None, None)  # type: ignore[arg-type]

    def append(self, session_id: str, message_id: str, text: str, role: str = "user") -> None:
        message = text_message(message_id, text, role)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO session_messages (session_id, id, role, content) VALUES (?, ?, ?, ?)",
                (session_id, message_id, role, encode_message(message).content),
            )
            if self.index.exists:
                self.index.index(session_id, message_id, role, indexed_text(message))

    def edit(self, session_id: str, message_id: str, text: str) -> None:
        message = text_message(message_id, text)
        with self.db.transaction():
            self.db.execute(
                "UPDATE session_messages SET content = ? WHERE session_id = ? AND id = ?",
                (encode_message(message).content, session_id, message_id),
            )
            if self.index.exists:
                self.index.reindex(session_id, message_id, "user", indexed_text(message))

    def delete(self, session_id: str, message_id: str) -> None:
        with self.db.transaction():
            self.db.execute(
                "DELETE FROM session_messages WHERE session_id = ? AND id = ?",
                (session_id, message_id),
            )
            if self.index.exists:
                self.index.unindex(session_id, [message_id])

    def hide_behind_compaction(self, session_id: str, compaction_id: str) -> None:
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO session_compactions (session_id, id) VALUES (?, ?)",
                (session_id, compaction_id),
            )

    def search(self, session_id: str, query: str, limit: int = 100) -> list[tuple[str, str, str]]:
        match = phrase_query(query)
        if match is None:
            return []
        with self.db.transaction():
            self.index.ensure()
        return [(h.id, h.role, h.content) for h in self.index.search(session_id, match, limit)]


@pytest.fixture
def engine(postgres_url: str) -> Iterator[PostgresEngine]:
    opened = PostgresEngine(parse_storage(postgres_url))
    yield opened
    opened.close()


@pytest.fixture
def engines(engine: PostgresEngine) -> Iterator[tuple[Conversation, Conversation]]:
    scope = PostgresScope(engine, "conversation")
    database = Database(":memory:")
    yield Conversation(database, SearchIndex), Conversation(scope, PgSearchIndex)
    database.close()
    scope.close()


def both(engines, action: str, *args):
    return [getattr(conversation, action)(*args) for conversation in engines]


def test_the_first_search_builds_the_index_from_every_stored_message(engines):
    both(engines, "append", "s", "a", "the deployment failed")
    both(engines, "append", "t", "b", "deployments fail elsewhere")
    sqlite, pg = engines
    assert not pg.index.exists
    assert pg.search("s", "deployments fail") == sqlite.search("s", "deployments fail")
    assert pg.search("s", "deployments fail") == [("a", "user", "the deployment failed")]
    assert pg.index.exists


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
    both(engines, "append", "s", f"{COMPACTION_PREFIX}k", "summary words")
    both(engines, "hide_behind_compaction", "s", "k")
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
    engine = PostgresEngine(parse_storage(postgres_url))
    scope = PostgresScope(engine, "conversation")
    database = Database(":memory:")
    try:
        for statement in (
            "DROP TABLE IF EXISTS session_search CASCADE",
            "DROP TABLE IF EXISTS session_search_parts",
            "DROP TABLE IF EXISTS session_messages",
            "DROP TABLE IF EXISTS session_compactions",
        ):
            scope.execute(statement)
        engines = (Conversation(database, SearchIndex), Conversation(scope, PgSearchIndex))
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
    finally:
        database.close()
        scope.close()
