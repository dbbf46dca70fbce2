"""Each package owns its tables: no module elsewhere runs SQL on them.

A package that needs another's data asks its read API (``backend.sessions.SearchableDocuments``
for the directory's message index), so a schema change stays inside the package that owns it.
The table names are read from real files, so a table added later is covered without editing
this test; FTS5 shadow tables (``<name>_data``, ...) belong to their virtual table's owner.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from backend.chats import Chats
from backend.sessions import Sessions
from backend.storage import Database
from tests.conftest import ROOT

APPLICATION_FOLDERS = ("backend", "chatsapp")
"""Shipped code. A package's own tests may look at its tables to pin the schema."""

_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
_SQL_CONTEXT = (
    r"(?:\bFROM|\bJOIN|\bINTO|\bUPDATE|\bTABLE(?:\s+IF\s+(?:NOT\s+)?EXISTS)?)\s+[\"'`\[]?{name}\b"
    r"|\b{name}\s+MATCH\b"
)


def tables_of(path: Path) -> set[str]:
    database = Database(path)
    try:
        return {row[0] for row in database.query(_TABLES)} - {"_migrations"}
    finally:
        database.close()


def sessions_tables(folder: Path) -> set[str]:
    with Sessions(folder / "conversation.sqlite") as sessions:
        sessions.session().search("builds the lazily created FTS table too")
    return tables_of(folder / "conversation.sqlite")


def directory_tables(folder: Path) -> set[str]:
    with Chats(folder, "owner") as chats:
        path = chats.layout.database_path
    return tables_of(path)


def string_literals(path: Path) -> list[str]:
    """Every string constant of a module except docstrings (prose may name a table)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def sql_mentions(tables: set[str], owner: Path) -> list[str]:
    """``file: table`` for each module outside ``owner`` whose SQL names one of ``tables``."""
    patterns = {
        table: re.compile(_SQL_CONTEXT.format(name=re.escape(table)), re.IGNORECASE)
        for table in tables
    }
    found = []
    for folder in APPLICATION_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(owner):
                continue
            for text in string_literals(path):
                for table, pattern in patterns.items():
                    # A bare name counts only when it cannot be an ordinary word (the CLI's
                    # program name is "chats", like the directory's table).
                    if (text == table and "_" in table) or pattern.search(text):
                        found.append(f"{path.relative_to(ROOT)}: {table}")
    return sorted(set(found))


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
        pattern = re.compile(_SQL_CONTEXT.format(name="chats"), re.IGNORECASE)
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
