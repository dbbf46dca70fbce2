"""Shared memory's store on both engines (``SharedContextStore`` and its PostgreSQL twin).

Blocks are read, set, appended and listed per directory; entries are searched by any word,
the entries holding more of the words first and, between equals, the newest first.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats.directory_storage import twin_of
from backend.chats.pg_shared import PgSharedContextStore
from backend.chats.shared import SharedContextStore
from backend.config import StorageChoice
from tests.support.storage_engines import directory_scope


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.fixture
def store(tmp_path: Path, storage: StorageChoice) -> Iterator[SharedContextStore]:
    with directory_scope(storage, _folder(tmp_path / "alice")) as db:
        yield twin_of(SharedContextStore, db)(db)


def test_the_store_twin_is_the_one_made_for_the_scope_s_engine(store):
    postgres = store.db.engine_kind == "postgresql"
    assert type(store) is (PgSharedContextStore if postgres else SharedContextStore)


def test_blocks_are_set_appended_and_listed_in_byte_order_of_their_labels(store):
    assert store.get("notes") is None
    store.set("notes", "first", 1)
    store.set("notes", "second", 2)
    assert store.append("notes", " and more", 3) == "second and more"
    assert store.append("Zeta", "new", 4) == "new"
    store.set("alpha", "a", 5)
    assert store.get("notes") == "second and more"
    assert store.list() == [("Zeta", "new"), ("alpha", "a"), ("notes", "second and more")]


def test_appends_from_many_threads_all_land(store):
    def append(worker: int) -> None:
        for index in range(10):
            store.append("log", f"[{worker}.{index}]", index)

    threads = [threading.Thread(target=append, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    content = store.get("log") or ""
    assert sorted(content[1:-1].split("][")) == sorted(
        f"{worker}.{index}" for worker in range(4) for index in range(10)
    )


def _index(store: SharedContextStore, label: str, key: str, content: str, now: int = 1) -> None:
    with store.db.transaction():
        store.index(label, key, content, now)


def test_search_puts_entries_holding_more_of_the_words_first(store):
    _index(store, "facts", "k1", "the cat sleeps")
    _index(store, "facts", "k2", "the cat chases the dog")
    _index(store, "facts", "k3", "nothing related")
    assert store.search("facts", "dog cat") == "the cat chases the dog\n\nthe cat sleeps"
    assert store.search("facts", "cat", limit=1) == "the cat sleeps"
    assert store.search("facts", "unicorn") is None
    assert store.search("facts", "   ") is None


def test_equal_entries_come_newest_first(store):
    for key in ("k1", "k2", "k3"):
        _index(store, "facts", key, f"tea {key}")
    assert store.search("facts", "tea") == "tea k3\n\ntea k2\n\ntea k1"


def test_indexing_a_key_again_replaces_its_entry(store):
    _index(store, "facts", "k1", "old words")
    _index(store, "facts", "k1", "new words", now=2)
    assert store.search("facts", "old") is None
    assert store.search("facts", "words") == "new words"


def test_entries_are_searched_within_their_label(store):
    _index(store, "facts", "k1", "the same words")
    _index(store, "other", "k1", "the same words elsewhere")
    assert store.search("facts", "words") == "the same words"
    assert store.search("missing", "words") is None


def test_two_directories_on_one_engine_share_no_block_and_no_entry(
    store, tmp_path: Path, storage: StorageChoice
):
    store.set("notes", "alice's", 1)
    _index(store, "facts", "k1", "alice's private words")
    with directory_scope(storage, _folder(tmp_path / "bob")) as bob_db:
        bob = twin_of(SharedContextStore, bob_db)(bob_db)
        assert bob.get("notes") is None and bob.list() == []
        assert bob.search("facts", "private") is None
        bob.set("notes", "bob's", 2)
        _index(bob, "facts", "k1", "bob's private words")
    assert store.get("notes") == "alice's"
    assert store.search("facts", "private") == "alice's private words"


def test_a_search_is_a_read_no_other_handle_of_the_directory_sees_as_a_commit(
    store, tmp_path: Path, storage: StorageChoice
):
    _index(store, "facts", "k1", "words to find")
    with directory_scope(storage, tmp_path / "alice") as other:
        before = other.data_version()
        assert store.search("facts", "find") == "words to find"
        assert other.data_version() == before
        store.set("notes", "a write", 2)
        assert other.data_version() != before
