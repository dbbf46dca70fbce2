"""Each package owns its tables: no module elsewhere runs SQL on them.

A package that needs another's data asks its read API (``backend.sessions.SearchableDocuments``
for the directory's message index), so a schema change stays inside the package that owns it.
The table names are read from real files, so a table added later is covered without editing
this test; FTS5 shadow tables (``<name>_data``, ...) belong to their virtual table's owner.
"""

from __future__ import annotations

import re

from backend.chats import Chats
from tests.conftest import ROOT
from tests.support.table_ownership import (
    SQL_CONTEXT,
    directory_tables,
    sessions_tables,
    sql_mentions,
    string_literals,
    tables_of,
)


class TestTableOwnership:
    def test_the_scan_finds_sql_on_a_table_and_ignores_prose(self, tmp_path):
        module = tmp_path / "probe" / "m.py"
        module.parent.mkdir()
        module.write_text(
            '"""Reads session_messages, but only in prose."""\n'
            'A = "SELECT id FROM session_messages WHERE session_id = ?"\n'
            'B = "the chats of a user"\n'
        )
        texts = string_literals(module)
        assert texts == [
            "SELECT id FROM session_messages WHERE session_id = ?",
            "the chats of a user",
        ]
        pattern = re.compile(SQL_CONTEXT.format(name="chats"), re.IGNORECASE)
        assert pattern.search("UPDATE chats SET title = ?") and not pattern.search(texts[1])

    def test_only_the_sessions_package_runs_sql_on_the_sessions_tables(self, tmp_path):
        tables = sessions_tables(tmp_path)
        assert {"session_messages", "session_message_chunks", "session_fts"} <= tables
        assert sql_mentions(tables, ROOT / "backend" / "sessions") == []

    def test_only_the_chats_package_runs_sql_on_the_directory_tables(self, tmp_path):
        tables = directory_tables(tmp_path)
        assert {"chats", "chat_titles", "message_fts", "index_leases"} <= tables
        assert sql_mentions(tables, ROOT / "backend" / "chats") == []

    def test_only_the_chats_package_runs_sql_on_the_vectors_of_search_by_meaning(self, tmp_path):
        """Made on a directory's first search by meaning, not when it opens."""
        from backend.chats.vector_store import vector_store_for

        with Chats(tmp_path, "owner") as chats:
            vector_store_for(chats.database)
            path = chats.layout.database_path
        tables = tables_of(path) - directory_tables(tmp_path / "bare")
        assert tables == {"message_vectors"}
        assert sql_mentions(tables, ROOT / "backend" / "chats") == []

    def test_only_the_agents_package_runs_sql_on_the_agent_library_tables(self, tmp_path):
        from backend.agents import AgentLibrary

        with Chats(tmp_path, "owner") as chats:
            AgentLibrary(chats.database)
            path = chats.layout.database_path
        tables = tables_of(path) - directory_tables(tmp_path / "bare")
        assert tables == {"agents", "agent_versions", "agent_settings"}
        assert sql_mentions(tables, ROOT / "backend" / "agents") == []

    def test_only_the_endpoints_package_runs_sql_on_the_settings_tables(self, tmp_path):
        from backend.config import Settings
        from backend.endpoints import SETTINGS_FILE, ModelEndpoints

        ModelEndpoints(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)})).close()
        tables = tables_of(tmp_path / SETTINGS_FILE)
        assert tables == {"model_endpoints"}
        assert sql_mentions(tables, ROOT / "backend" / "endpoints") == []

    def test_only_the_accounts_package_runs_sql_on_the_accounts_tables(self, tmp_path):
        from backend.accounts import ACCOUNTS_FILE, Accounts
        from backend.config import Settings

        Accounts(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)})).close()
        tables = tables_of(tmp_path / ACCOUNTS_FILE)
        assert {"users", "sessions", "invites", "account_events"} <= tables
        assert sql_mentions(tables, ROOT / "backend" / "accounts") == []

    def test_the_postgresql_twins_make_the_same_tables_each_owned_by_its_package(
        self, tmp_path, postgres_url
    ):
        """The twins' tables are read from PostgreSQL itself: the same names as the SQLite
        files' (plus the feed counter, see backend/accounts/pg_store.py), and the engine's
        bookkeeping tables are backend.storage's alone."""
        import psycopg

        from backend.accounts import ACCOUNTS_FILE, Accounts
        from backend.config import Settings
        from backend.endpoints import SETTINGS_FILE, ModelEndpoints

        for folder, storage in ((tmp_path / "files", ""), (tmp_path / "pg", postgres_url)):
            settings = Settings.from_env({"CHATS_DATA_DIR": str(folder), "CHATS_STORAGE": storage})
            Accounts(settings).close()
            ModelEndpoints(settings).close()
        with psycopg.connect(postgres_url) as conn:
            found = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        postgres = {name for (name,) in found}
        accounts = tables_of(tmp_path / "files" / ACCOUNTS_FILE) - {"sqlite_sequence"}
        endpoints = tables_of(tmp_path / "files" / SETTINGS_FILE)
        bookkeeping = {"_scopes", "_migrations"}
        assert postgres == accounts | {"account_event_counter"} | endpoints | bookkeeping
        assert (
            sql_mentions(
                postgres - accounts - endpoints - bookkeeping, ROOT / "backend" / "accounts"
            )
            == []
        )
        assert sql_mentions(bookkeeping, ROOT / "backend" / "storage") == []
