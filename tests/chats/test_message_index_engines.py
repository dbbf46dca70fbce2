"""The cross-chat message index store, on both engines (``MessageIndexStore`` and its twin).

Each test opens a person's directory scope on the engine under test and keeps the index
there: documents follow ``apply`` / ``replace_all`` with a digest per message, leases are per
chat and holder, a search finds live chats' messages best first with marked snippets, and two
directories on one engine share nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.chats.directory_storage import twin_of
from backend.chats.index_store import MessageIndexStore
from backend.chats.pg_index_store import PgMessageIndexStore
from backend.chats.snippets import SNIPPET_WINDOW_CHARS
from backend.chats.text import SNIPPET_END, SNIPPET_START, phrase_query
from backend.config import StorageChoice
from backend.storage import Scope
from tests.chats.directory_chats import DirectoryChats
from tests.support.storage_engines import directory_scope

# Their own ``chats`` table (tests/chats/directory_chats.py) in place of the application's.
pytestmark = pytest.mark.fresh_schema


class Index:
    """A directory scope with its chat rows and its message index store."""

    def __init__(self, db: Scope) -> None:
        self.db = db
        self.chats = DirectoryChats(db)
        self.store = twin_of(MessageIndexStore, db)(db)

    def search(self, query: str, limit: int = 20) -> list[tuple[str, str]]:
        match = phrase_query(query)
        assert match is not None
        return [(hit.chat_id, hit.message_id) for hit in self.store.search(match, limit)]


@pytest.fixture
def index(tmp_path: Path, storage: StorageChoice) -> Iterator[Index]:
    with directory_scope(storage, _folder(tmp_path / "alice")) as db:
        yield Index(db)


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


def test_the_store_twin_is_the_one_made_for_the_scope_s_engine(index):
    expected = PgMessageIndexStore if index.db.engine_kind == "postgresql" else MessageIndexStore
    assert type(index.store) is expected


def test_applied_messages_are_found_across_chats_with_marked_snippets(index):
    index.chats.add(1, "chat-a")
    index.chats.add(2, "chat-b")
    with index.db.transaction():
        index.store.apply(1, {"m1": "the deployment failed at noon", "m2": "lunch plans"})
        index.store.apply(2, {"m1": "deployments fail on Fridays"})
    assert sorted(index.search("deployment fail")) == [("chat-a", "m1"), ("chat-b", "m1")]
    hit = index.store.search(phrase_query("lunch") or "", 5)[0]
    assert hit.snippet == f"{SNIPPET_START}lunch{SNIPPET_END} plans"


def test_unchanged_text_is_not_rewritten_and_changed_text_replaces_the_document(index):
    index.chats.add(1, "chat-a")
    with index.db.transaction():
        first = index.store.apply(1, {"m1": "alpha", "m2": "beta", "m3": ""})
    assert (first.added, first.updated, first.removed) == (2, 0, 0)
    with index.db.transaction():
        again = index.store.apply(1, {"m1": "alpha", "m2": "gamma", "m3": None})
    assert (again.added, again.updated, again.removed) == (0, 1, 0)
    assert index.search("beta") == [] and index.search("gamma") == [("chat-a", "m2")]
    with index.db.transaction():
        gone = index.store.apply(1, {"m1": None})
    assert (gone.added, gone.updated, gone.removed) == (0, 0, 1)
    assert index.search("alpha") == []
    assert index.store.count(1) == 1


def test_replace_all_makes_a_chat_s_documents_exactly_the_truth(index):
    index.chats.add(1, "chat-a")
    index.chats.add(2, "chat-b")
    with index.db.transaction():
        index.store.apply(1, {"m1": "kept words", "m2": "stale words"})
        index.store.apply(2, {"m1": "other chat words"})
        counts = index.store.replace_all(1, {"m1": "kept words", "m3": "fresh words"})
    assert (counts.added, counts.updated, counts.removed) == (1, 0, 1)
    assert sorted(index.search("words")) == [
        ("chat-a", "m1"),
        ("chat-a", "m3"),
        ("chat-b", "m1"),
    ]
    assert sorted(index.store.indexed_chats()) == [1, 2]
    with index.db.transaction():
        assert index.store.drop_chat(1) == 2
    assert index.search("words") == [("chat-b", "m1")]
    assert index.store.indexed_chats() == [2]


def test_a_deleted_chat_s_messages_are_not_found(index):
    index.chats.add(1, "chat-a")
    index.chats.add(2, "chat-b")
    with index.db.transaction():
        index.store.apply(1, {"m1": "shared secret"})
        index.store.apply(2, {"m1": "shared secret"})
    index.chats.delete(1)
    assert index.search("secret") == [("chat-b", "m1")]


def test_the_short_text_ranks_first_and_ties_go_in_chat_then_message_order(index):
    for num, chat_id in ((1, "chat-b"), (2, "chat-a"), (3, "chat-c")):
        index.chats.add(num, chat_id)
    with index.db.transaction():
        index.store.apply(3, {"m1": "tea and a very long text " * 20, "m0": "tea " * 5})
        index.store.apply(1, {"m2": "coffee", "m1": "coffee"})
        index.store.apply(2, {"m9": "coffee"})
    assert index.search("tea") == [("chat-c", "m0"), ("chat-c", "m1")]
    assert index.search("coffee") == [("chat-a", "m9"), ("chat-b", "m1"), ("chat-b", "m2")]
    assert index.search("coffee", limit=2) == [("chat-a", "m9"), ("chat-b", "m1")]
    ranks = [hit.rank for hit in index.store.search(phrase_query("tea") or "", 5)]
    assert ranks == sorted(ranks) and ranks[0] < ranks[1]


def test_a_long_message_gets_a_windowed_snippet_around_its_first_hit(index):
    index.chats.add(1, "chat-a")
    text = "filler " * (SNIPPET_WINDOW_CHARS // 3) + "the needle here " + "tail " * 50
    with index.db.transaction():
        index.store.apply(1, {"m1": text})
    (hit,) = index.store.search(phrase_query("needle") or "", 5)
    assert f"{SNIPPET_START}needle{SNIPPET_END}" in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")


def test_new_documents_get_ids_above_every_earlier_one(index):
    """Documents are keyed by increasing ids (see backend/chats/index_store.py)."""
    index.chats.add(1, "chat-a")
    with index.db.transaction():
        index.store.apply(1, {"m1": "one", "m2": "two"})
        before = {message_id: doc for message_id, doc, _ in _documents(index.store, 1)}
        index.store.apply(1, {"m1": "one changed", "m3": "three"})
        after = {message_id: doc for message_id, doc, _ in _documents(index.store, 1)}
    assert after["m2"] == before["m2"]
    assert min(after["m1"], after["m3"]) > max(before.values())


def _documents(store: MessageIndexStore, chat_num: int) -> list[tuple[str, int, bytes]]:
    rows = store.db.query(store._SELECT_ALL_DOCS, (*store._key, chat_num))
    return [(row[0], int(row[1]), bytes(row[2])) for row in rows]


def test_leases_are_per_chat_and_holder_and_taken_once(index):
    with index.db.transaction():
        index.store.acquire(2, "holder-x", 10)
        index.store.acquire(1, "holder-x", 11)
        index.store.acquire(1, "holder-x", 12)
        index.store.acquire(1, "holder-y", 13)
    leases = index.store.leases()
    assert sorted(leases) == [(1, "holder-x"), (1, "holder-y"), (2, "holder-x")]
    assert [num for num, _ in leases] == [1, 1, 2]  # in chat order
    with index.db.transaction():
        index.store.release(1, "holder-x")
    assert sorted(index.store.leases()) == [(1, "holder-y"), (2, "holder-x")]
    with index.db.transaction():
        index.store.release_all(1)
    assert index.store.leases() == [(2, "holder-x")]


def test_two_directories_on_one_engine_share_no_document_and_no_lease(
    index, tmp_path: Path, storage: StorageChoice
):
    index.chats.add(1, "chat-a")
    with index.db.transaction():
        index.store.apply(1, {"m1": "alice's private words"})
        index.store.acquire(1, "holder-a", 1)
    with directory_scope(storage, _folder(tmp_path / "bob")) as bob_db:
        bob = Index(bob_db)
        bob.chats.add(1, "chat-a")
        assert bob.search("private") == []
        assert bob.store.leases() == [] and bob.store.indexed_chats() == []
        with bob_db.transaction():
            bob.store.apply(1, {"m1": "bob's own private words"})
            bob.store.drop_chat(1)
    assert index.search("private") == [("chat-a", "m1")]
    assert index.store.leases() == [(1, "holder-a")]


def test_a_search_is_a_read_no_other_handle_of_the_directory_sees_as_a_commit(
    index, tmp_path: Path, storage: StorageChoice
):
    index.chats.add(1, "chat-a")
    with index.db.transaction():
        index.store.apply(1, {"m1": "words to find"})
    with directory_scope(storage, tmp_path / "alice") as other:
        before = other.data_version()
        assert index.search("find") == [("chat-a", "m1")]
        assert other.data_version() == before
        with index.db.transaction():
            index.store.apply(1, {"m2": "more words"})
        assert other.data_version() != before
