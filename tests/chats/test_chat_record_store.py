"""The chat index's store on both engines: numbering, titles, the lifecycle's rows, watermarks.

Each test opens a person's directory scope the way ``Chats`` does (a ``directory.sqlite``
file, or the PostgreSQL scope named as that file) and drives the store on it, so the same
statements are pinned on SQLite and on the PostgreSQL twin.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from backend.chats.chat_records import ChatRecordStore
from backend.chats.text import prefix_query
from backend.chats.values import ChatCursor
from backend.config import StorageChoice
from backend.storage import Scope
from tests.support.storage_engines import directory_scope


@contextmanager
def record_store(storage: StorageChoice, folder: Path) -> Iterator[ChatRecordStore]:
    from backend.chats.directory_storage import record_store_for

    folder.mkdir(parents=True, exist_ok=True)
    with directory_scope(storage, folder) as scope:
        yield record_store_for(scope)


@pytest.fixture
def store(storage, tmp_path) -> Iterator[ChatRecordStore]:
    with record_store(storage, tmp_path / "alice") as opened:
        yield opened


def titles(found) -> list[str]:
    return [summary.title for summary in found]


def search(store: ChatRecordStore, query: str, limit: int = 20) -> list[str]:
    match = prefix_query(query)
    assert match is not None
    return titles(store.search_titles(match, limit))


class TestNumbering:
    def test_chats_are_numbered_from_one_in_each_directory(self, storage, tmp_path):
        with (
            record_store(storage, tmp_path / "alice") as alice,
            record_store(storage, tmp_path / "bob") as bob,
        ):
            assert [alice.insert(f"c{i}", "t", 1).num for i in range(3)] == [1, 2, 3]
            assert bob.insert("c0", "t", 1).num == 1

    def test_two_directories_share_nothing_even_the_same_ids(self, storage, tmp_path):
        with (
            record_store(storage, tmp_path / "alice") as alice,
            record_store(storage, tmp_path / "bob") as bob,
        ):
            alice.insert("same", "Alice's", 1)
            bob.insert("same", "Bob's", 2)
            bob.soft_delete(bob.load("same"), 3)
            assert alice.load("same").title == "Alice's" and alice.load("same").live
            assert titles(alice.list_live(10, None)) == ["Alice's"]
            assert titles(bob.list_live(10, None)) == []
            assert alice.id_key() != bob.id_key()

    def test_the_same_folder_reopened_sees_the_same_rows_and_id_key(self, storage, tmp_path):
        with record_store(storage, tmp_path / "alice") as first:
            first.insert("kept", "Kept", 1)
            key = first.id_key()
        with record_store(storage, tmp_path / "alice") as again:
            assert again.load("kept").title == "Kept"
            assert again.id_key() == key
            assert again.insert("next", "Next", 2).num == 2


class TestTitles:
    TITLES = (
        "Trip to Lisbon",
        "Café notes",
        "foo.bar.com setup",
        "some-words here",
        "Lisbon trip budget",
        "Résumé draft",
    )

    @pytest.fixture
    def filled(self, store):
        for number, title in enumerate(self.TITLES, start=1):
            store.insert(f"chat{number}", title, number)
        return store

    @pytest.mark.parametrize(
        ("query", "expected"),
        [
            ("lis", {"Trip to Lisbon", "Lisbon trip budget"}),
            ("trip lis", {"Trip to Lisbon", "Lisbon trip budget"}),
            ("cafe", {"Café notes"}),
            ("CAFÉ", {"Café notes"}),
            ("bar", {"foo.bar.com setup"}),
            ("foo.bar", {"foo.bar.com setup"}),
            ("words", {"some-words here"}),
            ("resume", {"Résumé draft"}),
            ("budget trip", {"Lisbon trip budget"}),
            ("lisbons", set()),
            ("trips", set()),  # titles are not stemmed
        ],
    )
    def test_every_word_must_match_the_last_as_a_prefix(self, filled, query, expected):
        assert set(search(filled, query)) == expected

    def test_the_best_match_comes_first_and_ties_newest_first(self, store):
        store.insert("a", "lisbon", 1)
        store.insert("b", "notes on lisbon and more words", 2)
        store.insert("c", "lisbon", 3)
        assert search(store, "lisbon") == ["lisbon", "lisbon", "notes on lisbon and more words"]
        assert [s.id for s in store.search_titles(prefix_query("lisbon"), 2)] == ["c", "a"]

    def test_a_rename_and_a_purge_move_the_title_index(self, filled):
        record = filled.load("chat1")
        renamed = filled.rename(record, "Porto weekend")
        assert search(filled, "porto") == ["Porto weekend"]
        assert "Porto weekend" not in search(filled, "lis")
        filled.soft_delete(renamed, 10)
        assert search(filled, "porto") == []
        assert filled.mark_purged(filled.load("chat1"), 11)
        filled.restore(filled.load("chat1"))  # a purged row is never restored
        assert search(filled, "porto") == []

    def test_list_filters_by_title_in_the_main_or_the_archived_list(self, filled):
        filled.archive(filled.load("chat5"), 20)
        match = prefix_query("lis")
        assert titles(filled.list_live(10, None, match)) == ["Trip to Lisbon"]
        assert titles(filled.list_live(10, None, match, archived=True)) == ["Lisbon trip budget"]
        assert set(search(filled, "lis")) == {"Trip to Lisbon", "Lisbon trip budget"}

    def test_a_query_without_tokens_finds_nothing(self, filled):
        assert filled.search_titles('"..."', 10) == []
        assert filled.list_live(10, None, '"..."') == []


class TestLifecycleRows:
    def test_recreating_a_purged_id_moves_the_generation_forward(self, store):
        first = store.insert("x", "One", 1)
        store.soft_delete(first, 2)
        assert store.mark_purged(store.load("x"), 3)
        again = store.recreate(store.load("x"), "Two", 4)
        assert (again.num, again.generation, again.live) == (first.num, 2, True)
        assert store.load("x") == again
        assert not store.mark_purged(again, 5)  # live: nothing to purge

    def test_archive_unarchive_and_the_untouched_policy_rows(self, store):
        old = store.insert("old", "Old", 1)
        store.insert("new", "New", 100)
        assert [r.id for r in store.untouched_since(50, 10)] == ["old"]
        assert store.archive(old, 60) is not None and store.archive(old, 61) is None
        assert store.untouched_since(50, 10) == []
        back = store.unarchive(store.load("old"), 70)
        assert back is not None and back.unarchived_at == 70
        assert store.untouched_since(65, 10) == []  # unarchiving counts as a touch

    def test_pages_by_a_tie_stable_cursor(self, store):
        for name in ("a", "b", "c", "d"):
            store.insert(name, name.upper(), 5)
        first = store.list_live(2, None)
        rest = store.list_live(2, ChatCursor(first[-1].updated_at, first[-1].id))
        assert [s.id for s in first + rest] == ["d", "c", "b", "a"]
        assert store.list_live(10, 5) == []

    def test_settings_round_trip_and_unset(self, store):
        assert store.load_setting("k") is None
        store.put_setting("k", "v1")
        store.put_setting("k", "v2")
        assert store.load_setting("k") == "v2"
        store.put_setting("k", None)
        assert store.load_setting("k") is None

    def test_due_for_purge_takes_the_oldest_deleted_first(self, store):
        for name, at in (("a", 30), ("b", 10), ("c", 20)):
            store.soft_delete(store.insert(name, name, 1), at)
        assert [r.id for r in store.due_for_purge(25, 10)] == ["b", "c"]
        assert [r[1] for r in store.unpurged_chats()] and store.live_chats() == []


class TestWatermarks:
    def test_changes_past_the_marks_are_listed_by_kind(self, store):
        kept = store.insert("kept", "Kept", 1)
        gone = store.insert("gone", "Gone", 2)
        marks = store.watermarks()
        assert marks == (2, 2, 0)
        store.insert("new", "New", 3)
        store.record_turn(kept, "hello", 4)
        store.soft_delete(gone, 5)
        created, updated, deleted = store.changed_after(marks, 10)
        assert [r.id for r in created] == ["new"]
        assert [r.id for r in updated] == ["kept", "new"]
        assert [r.id for r in deleted] == ["gone"]
        assert store.watermarks() == (3, 4, 5)


def test_each_engine_gets_its_twin(storage, tmp_path):
    """The SQLite store on a file, the PostgreSQL twin on a PostgreSQL scope."""
    with record_store(storage, tmp_path / "alice") as opened:
        scope: Scope = opened.db
        twin = type(opened).__name__
    assert (scope.engine_kind, twin) in {
        ("sqlite", "ChatRecordStore"),
        ("postgresql", "PgChatRecordStore"),
    }
