"""A long import into a new PostgreSQL database is planned on real numbers
(backend/storage/postgres/statistics.py): without statistics the planner took
``session_messages_by_seq`` for every key lookup and filtered the whole conversation."""

from __future__ import annotations

import pytest

from backend.sessions import Session
from backend.storage.postgres.statistics import ROWS_BEFORE_ANALYZE
from tests.sessions.conftest import raw_db, text_message

_LOOKUP = "EXPLAIN SELECT seq FROM session_messages WHERE scope = ? AND session_id = ? AND id = ?"
_NEVER_ANALYZED = "SELECT reltuples < 0 AS never FROM pg_class WHERE oid = ?::regclass"


@pytest.fixture
def postgresql(storage):
    if storage == "sqlite":
        pytest.skip("PostgreSQL's planner (a file's tables are SQLite's)")


def import_in_one_transaction(session: Session, count: int) -> None:
    with session._db.transaction():
        parent = None
        for index in range(count):
            message_id = f"m{index}"
            session.import_message(text_message(message_id), parent_id=parent, created_at=index)
            parent = message_id


def lookup_plan(session: Session) -> str:
    db = raw_db(session)
    scope = db.query_one("SELECT scope FROM session_messages LIMIT 1")
    assert scope is not None
    rows = db.query(_LOOKUP, (scope["scope"], "", "m7"))
    return "\n".join(row[0] for row in rows)


def never_analyzed(session: Session, table: str) -> bool:
    row = raw_db(session).query_one(_NEVER_ANALYZED, (table,))
    assert row is not None
    return bool(row["never"])


def test_a_long_import_looks_messages_up_by_their_primary_key(postgresql, session):
    assert never_analyzed(session, "session_messages")
    import_in_one_transaction(session, ROWS_BEFORE_ANALYZE + 10)
    assert "session_messages_pkey" in lookup_plan(session)
    assert not never_analyzed(session, "session_messages")
    assert not never_analyzed(session, "session_search")


def test_a_short_import_leaves_the_tables_to_autovacuum(postgresql, session):
    import_in_one_transaction(session, 10)
    assert never_analyzed(session, "session_messages")
