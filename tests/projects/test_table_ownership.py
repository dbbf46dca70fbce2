"""Only backend/projects runs SQL on the projects tables, on either engine."""

from __future__ import annotations

import psycopg
import pytest

from backend.chats import Chats
from backend.projects import Projects
from tests.conftest import ROOT
from tests.support.table_ownership import directory_tables, sql_mentions, tables_of

SQLITE_TABLES = {
    "projects",
    "project_chats",
    "project_files",
    "project_chunks",
    "project_chunks_fts",
}


@pytest.mark.sqlite_only
def test_the_projects_tables_in_the_directory_file_are_the_projects_packages(tmp_path):
    with Chats(tmp_path, "owner") as chats:
        Projects(chats)
        path = chats.layout.database_path
    tables = tables_of(path) - directory_tables(tmp_path / "bare")
    assert {t for t in tables if not t.startswith("project_chunks_fts_")} == SQLITE_TABLES
    assert sql_mentions(tables, ROOT / "backend" / "projects") == []


def test_the_postgresql_twin_makes_tables_only_the_projects_package_names(chats, projects, storage):
    if storage == "sqlite":
        pytest.skip("the PostgreSQL twin's tables")
    with psycopg.connect(storage.url) as conn:
        found = {
            name
            for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename LIKE 'project%'"
            ).fetchall()
        }
    assert found == SQLITE_TABLES - {"project_chunks_fts"} | {"project_chunk_parts"}
    assert sql_mentions(found, ROOT / "backend" / "projects") == []
