"""Import sources on both engines (``SourceStore`` and its PostgreSQL twin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats.directory_storage import twin_of
from backend.chats.pg_sources import PgSourceStore
from backend.chats.sources import SourceRow, SourceStore
from backend.config import StorageChoice
from tests.support.storage_engines import directory_scope


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.fixture
def sources(tmp_path: Path, storage: StorageChoice) -> Iterator[SourceStore]:
    with directory_scope(storage, _folder(tmp_path / "alice")) as db:
        yield twin_of(SourceStore, db)(db)


def test_the_store_twin_is_the_one_made_for_the_scope_s_engine(sources):
    postgres = sources.db.engine_kind == "postgresql"
    assert type(sources) is (PgSourceStore if postgres else SourceStore)


def test_a_source_is_incomplete_until_completed_and_names_its_chat(sources):
    assert sources.load("chatgpt", "conv-1") is None
    with sources.db.transaction():
        sources.begin("chatgpt", "conv-1", 7, "digest-a", 100)
    assert sources.load("chatgpt", "conv-1") == SourceRow(7, "digest-a", False)
    assert sources.source_of(7) == ("chatgpt", "conv-1")
    with sources.db.transaction():
        sources.complete("chatgpt", "conv-1")
    assert sources.load("chatgpt", "conv-1") == SourceRow(7, "digest-a", True)
    assert sources.load("chats", "conv-1") is None and sources.source_of(8) is None


def test_beginning_a_source_again_repoints_it_and_marks_it_incomplete(sources):
    with sources.db.transaction():
        sources.begin("chats", "c1", 1, "d1", 100)
        sources.complete("chats", "c1")
        sources.begin("chats", "c1", 2, "d2", 200)
    assert sources.load("chats", "c1") == SourceRow(2, "d2", False)
    assert sources.source_of(2) == ("chats", "c1") and sources.source_of(1) is None


def test_two_directories_on_one_engine_share_no_source(
    sources, tmp_path: Path, storage: StorageChoice
):
    with sources.db.transaction():
        sources.begin("chatgpt", "conv-1", 1, "alice", 1)
    with directory_scope(storage, _folder(tmp_path / "bob")) as bob_db:
        bob = twin_of(SourceStore, bob_db)(bob_db)
        assert bob.load("chatgpt", "conv-1") is None
        with bob_db.transaction():
            bob.begin("chatgpt", "conv-1", 5, "bob", 2)
            bob.complete("chatgpt", "conv-1")
    assert sources.load("chatgpt", "conv-1") == SourceRow(1, "alice", False)
