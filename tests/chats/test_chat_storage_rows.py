"""On PostgreSQL "does this chat's file exist" is a row of the directory, nothing on disk.

``backend.chats.pg_layout.PgChatFiles`` notes a generation before its conversation first
opens; the stale sweep lists these rows where SQLite lists the ``chats/`` folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chats.directory_storage import chat_files_for
from backend.chats.layout import DirectoryLayout
from backend.config import PostgresLocation
from tests.support.storage_engines import directory_scope

ID_A = "0000000000000000-000000"
ID_B = "0000000000000001-000000"


@pytest.fixture
def postgresql(storage) -> PostgresLocation:
    """The PostgreSQL run's location (on SQLite the folder itself is the fact: see
    ``FolderChatFiles``, pinned by the lifecycle tests)."""
    if not isinstance(storage, PostgresLocation):
        pytest.skip("rows stand for files on PostgreSQL only")
    return storage


def layout_of(root: Path, who: str) -> DirectoryLayout:
    return DirectoryLayout(root, who, on_disk=False)


def test_a_generation_exists_once_noted_and_only_that_generation(postgresql, tmp_path):
    root = tmp_path / "logical"
    layout = layout_of(root, "alice")
    with directory_scope(postgresql, layout.folder) as scope:
        files = chat_files_for(scope, layout)
        assert not files.exists(ID_A, 1)
        files.opening(ID_A, 1)
        files.opening(ID_A, 1)  # noted once
        files.opening(ID_B, 2)
        assert files.exists(ID_A, 1) and not files.exists(ID_A, 2)
        assert files.stored() == [(ID_A, 1), (ID_B, 2)]
    assert not root.exists()


def test_two_directories_note_their_own_generations(postgresql, tmp_path):
    alice, bob = layout_of(tmp_path, "alice"), layout_of(tmp_path, "bob")
    with (
        directory_scope(postgresql, alice.folder) as alice_scope,
        directory_scope(postgresql, bob.folder) as bob_scope,
    ):
        chat_files_for(alice_scope, alice).opening(ID_A, 1)
        assert chat_files_for(bob_scope, bob).stored() == []
        assert chat_files_for(alice_scope, alice).stored() == [(ID_A, 1)]


def test_a_generation_never_opened_has_nothing_to_retire_or_remove(postgresql, tmp_path):
    layout = layout_of(tmp_path, "alice")
    with directory_scope(postgresql, layout.folder) as scope:
        files = chat_files_for(scope, layout)
        files.retire(ID_A, 1)
        files.remove(ID_A, 1)
        assert files.stored() == []


def test_the_same_logical_root_reopened_sees_the_same_rows(postgresql, tmp_path):
    layout = layout_of(tmp_path, "alice")
    with directory_scope(postgresql, layout.folder) as scope:
        chat_files_for(scope, layout).opening(ID_A, 1)
    with directory_scope(postgresql, layout.folder) as scope:
        assert chat_files_for(scope, layout).exists(ID_A, 1)


@pytest.mark.fresh_schema  # lists the tables
def test_the_directory_twins_tables_are_the_chats_package_s_alone(postgresql, tmp_path):
    """On PostgreSQL too only backend/chats runs SQL on the chat index's tables (the same
    names as in ``directory.sqlite``, plus ``chat_storage``, which stands for the folder)."""
    import psycopg

    from backend.chats.directory_storage import record_store_for
    from tests.conftest import ROOT
    from tests.support.table_ownership import sql_mentions

    layout = layout_of(tmp_path, "alice")
    with directory_scope(postgresql, layout.folder) as scope:
        record_store_for(scope)
        chat_files_for(scope, layout)
    with psycopg.connect(postgresql.url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        tables = {name for (name,) in rows.fetchall()} - {"_scopes", "_migrations"}
    assert tables == {"directory_meta", "chats", "chat_titles", "chat_storage"}
    assert sql_mentions(tables, ROOT / "backend" / "chats") == []


def test_a_directory_on_another_engine_than_chats_storage_is_refused(
    storage, tmp_path, monkeypatch
):
    """Its conversations open on CHATS_STORAGE's engine: a mix would split the directory."""
    from backend.chats import Chats
    from backend.config import parse_storage
    from backend.errors import ConfigurationError

    other = (
        "sqlite"
        if isinstance(storage, PostgresLocation)
        else parse_storage("postgresql://someone:hunter2@db.invalid/chats")
    )
    with pytest.raises(ConfigurationError, match="CHATS_STORAGE names") as refused:
        Chats(tmp_path, "alice", storage=other)
    assert "hunter2" not in str(refused.value)
    assert not (tmp_path / "alice").exists()
