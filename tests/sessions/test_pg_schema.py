"""The conversation tables on PostgreSQL: one set for every conversation, each row keyed by its
scope first (docs/architecture.md, "Storage engines"), created by versioned migrations."""

from __future__ import annotations

import pytest

from backend.sessions.pg_schema import MIGRATIONS

_KEYS = """
    SELECT c.relname AS table_name, i.indisprimary AS primary_key, a.attname AS first_column,
        am.amname AS method
    FROM pg_index AS i
    JOIN pg_class AS c ON c.oid = i.indrelid
    JOIN pg_class AS ic ON ic.oid = i.indexrelid
    JOIN pg_am AS am ON am.oid = ic.relam
    JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
    WHERE c.relname LIKE 'session%' AND c.relnamespace = current_schema()::regnamespace
"""


@pytest.fixture
def postgresql(storage):
    if storage == "sqlite":
        pytest.skip("the PostgreSQL tables (test_schema.py pins the SQLite file's)")


@pytest.mark.fresh_schema  # lists the tables
def test_every_table_and_index_leads_with_the_scope(postgresql, sessions):
    sessions.session().search("the search tables are there from the start")
    keys = sessions.database.query(_KEYS)
    tables = {row["table_name"] for row in keys if row["primary_key"]}
    assert tables == {
        "session_scopes",
        "session_messages",
        "session_message_chunks",
        "session_compactions",
        "session_config",
        "session_attachment_meta",
        "session_attachment_chunks",
        "session_attachment_refs",
        "session_search_scopes",
        "session_search",
        "session_search_parts",
    }
    btree = [row for row in keys if row["method"] == "btree"]
    assert {row["first_column"] for row in btree} == {"scope"}, btree
    assert [row["table_name"] for row in keys if row["method"] != "btree"] == [
        "session_search_parts"  # the GIN index of the parts' tsvectors
    ]


def test_the_migrations_are_recorded_under_the_sessions_component(postgresql, sessions):
    rows = sessions.database.query("SELECT name FROM _migrations WHERE component = 'sessions'")
    assert [row["name"] for row in rows] == [m.__name__ for m in MIGRATIONS]
