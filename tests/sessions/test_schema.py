"""The schema: composite keys without rowids, no secondary index, versioned forward migrations."""

from __future__ import annotations

import pytest

from backend.sessions import SCHEMA_VERSION, Sessions
from backend.sessions.migration import TABLES as COPIED_TABLES
from backend.sessions.schema import MIGRATIONS
from backend.sessions.store import SessionStore
from backend.storage import Database
from tests.sessions.conftest import append_chain

# The tables `chats migrate` copies (backend.sessions.migration) are the file's tables: one
# the schema adds without listing it there, or drops while it is listed, fails below.
SESSION_TABLES = {table.name for table in COPIED_TABLES}


def columns(database: Database, table: str) -> list[str]:
    return [row["name"] for row in database.query(f"PRAGMA table_info({table})")]


class TestTables:
    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_creates_exactly_the_session_tables(self, sessions):
        names = {
            row["name"]
            for row in sessions.database.query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'session%'"
            )
        }
        assert names == SESSION_TABLES

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_keys_every_table_without_a_rowid(self, sessions):
        for table in SESSION_TABLES:
            sql = sessions.database.query_one(
                "SELECT sql FROM sqlite_master WHERE name = ?", (table,)
            )["sql"]
            assert sql.rstrip().endswith("WITHOUT ROWID"), table
            assert "PRIMARY KEY" in sql, table

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_has_no_secondary_index(self, sessions):
        sessions.session().search("builds the fts table too")
        indexes = sessions.database.query(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name LIKE 'session%'"
        )
        assert indexes == []

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_every_table_has_the_columns_migrate_copies(self, sessions):
        for table in COPIED_TABLES:
            assert columns(sessions.database, table.name) == list(table.columns), table.name

    def test_creates_no_context_or_legacy_attachment_table(self, sessions):
        for table in ("session_context_blocks", "session_attachments", "context_blocks"):
            assert not sessions.database.table_exists(table)

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_the_fts_table_appears_only_with_the_first_search(self, sessions, session):
        append_chain(session, "a")
        assert not sessions.database.table_exists("session_fts")
        session.search("a")
        assert sessions.database.table_exists("session_fts")

    def test_stamps_a_32_byte_digest_of_the_stored_form_on_every_write(self, sessions, session):
        append_chain(session, "a")

        def digest() -> bytes:
            return sessions.database.query_one(
                "SELECT content_hash FROM session_messages WHERE id = 'a'"
            )["content_hash"]

        first = digest()
        assert isinstance(first, bytes) and len(first) == 32
        session.update_message(
            {"id": "a", "role": "user", "parts": [{"type": "text", "text": "text of a"}]}
        )
        assert digest() == first
        session.update_message(
            {"id": "a", "role": "user", "parts": [{"type": "text", "text": "new"}]}
        )
        assert digest() != first


class TestMigrations:
    def test_a_new_file_records_every_migration_under_the_sessions_component(self, sessions):
        rows = sessions.database.query(
            "SELECT name FROM _migrations WHERE component = 'sessions' ORDER BY name"
        )
        assert [row["name"] for row in rows] == [m.__name__ for m in MIGRATIONS]
        assert SCHEMA_VERSION == len(MIGRATIONS) == 1

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_reopening_a_file_runs_no_migration_again(self, db_path):
        Sessions(db_path).close()
        database = Database(db_path)
        assert database.migrate("sessions", list(MIGRATIONS)) == []
        database.close()

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_a_later_migration_is_applied_once_to_an_existing_file(self, db_path):
        with Sessions(db_path) as store:
            append_chain(store.session(), "a")

        def m002_add_example_column(db: Database) -> None:
            db.execute("ALTER TABLE session_config ADD COLUMN updated_at INTEGER")

        database = Database(db_path)
        assert database.migrate("sessions", [*MIGRATIONS, m002_add_example_column]) == [
            "m002_add_example_column"
        ]
        assert database.migrate("sessions", [*MIGRATIONS, m002_add_example_column]) == []
        assert "updated_at" in columns(database, "session_config")
        store = SessionStore(database)
        assert store.leaf_id("") == "a"
        database.close()

    @pytest.mark.sqlite_only  # the tables of a SQLite file (test_pg_schema.py: PostgreSQL)
    def test_other_components_tables_can_share_the_file(self, db_path):
        database = Database(db_path)
        database.execute("CREATE TABLE runtime_state (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
        with Sessions(database) as store:
            append_chain(store.session(), "a")
        assert database.table_exists("runtime_state")
        database.close()
