"""Search by meaning over a directory: vectors beside the message index, written in the
background, caught up after a restart, removed with their message, fused with full-text;
on both engines (the directory's ``storage``, tests/chats/conftest.py)."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from backend.chats import Chats, vector_store
from backend.chats.meaning_search import WORKER_NICENESS, MeaningSearch
from backend.chats.vector_store import vector_store_for
from backend.meaning import BundledEmbedder, EmbedderUnavailable
from backend.storage import Database
from tests.chats.conftest import text_message
from tests.meaning.fake_embedder import FakeEmbedder
from tests.support.deadlines import until

TOPICS = {
    "dog": "my dog is broken, how can I repair it",
    "roof": "painting the roof blue",
    "fridge": "what does it cost to buy a new refrigerator",
}


@pytest.fixture(scope="module")
def embedder():
    return BundledEmbedder()


@pytest.fixture
def topics(chats):
    ids = {}
    for name, text in TOPICS.items():
        chat = chats.get_chat(chats.create_chat(name).id)
        chat.session.append_message(text_message("m", text))
        ids[name] = chat.id
    return ids


def chat_ids(result):
    return [hit.chat_id for hit in result.hits]


def test_a_paraphrase_without_a_common_word_is_found_by_meaning(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    assert chats.search_messages("fixing a damaged puppy") == []
    assert meaning.catch_up() == 3
    result = meaning.search("fixing a damaged puppy", limit=1)
    assert result.complete
    assert chat_ids(result) == [topics["dog"]]


def test_exact_words_stay_first(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    assert chat_ids(meaning.search("roof blue"))[0] == topics["roof"]


def test_a_search_while_catching_up_gives_full_text_hits_marked_incomplete(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    result = meaning.search("refrigerator")
    assert not result.complete
    assert chat_ids(result) == [topics["fridge"]]


def test_an_embedder_that_cannot_run_gives_full_text_marked_incomplete(chats, topics):
    class Down:
        name = "down"

        def embed_documents(self, texts):
            raise EmbedderUnavailable("down")

        def embed_query(self, text):
            raise EmbedderUnavailable("down")

    result = MeaningSearch(chats, Down()).search("painting")
    assert not result.complete
    assert chat_ids(result) == [topics["roof"]]


def test_vectors_go_with_their_message_and_their_chat(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    chats.get_chat(topics["dog"]).session.delete_messages(["m"])
    chats.delete_chat(topics["roof"])
    assert topics["dog"] not in chat_ids(meaning.search("fixing a damaged puppy"))
    assert topics["roof"] not in chat_ids(meaning.search("changing the colour of a house top"))
    meaning.catch_up()
    store = vector_store_for(chats.database)
    assert len(store.table(embedder.name).keys) == 2  # the deleted message's row is gone


def test_vectors_go_with_their_purged_chat(chats, topics, embedder, clock):
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    store = vector_store_for(chats.database)
    chats.delete_chat(topics["roof"])
    meaning.catch_up()
    assert len(store.table(embedder.name).keys) == 3  # kept for an undo within the window
    clock.advance(3600 * 1000)  # the soft-delete window of the ``chats`` fixture
    assert chats.sweep() == [topics["roof"]]
    assert meaning.catch_up() == 0
    assert len(store.table(embedder.name).keys) == 2


def test_a_vector_written_again_moves_the_version_readers_compare(chats, topics, embedder):
    """Two workers may embed the same message (the app's, an import's): the second write
    replaces the row and still tells a reader's cached table it is out of date."""
    store = vector_store_for(chats.database)
    chats.flush_index()
    documents = store.missing(embedder.name, 10)
    vectors = embedder.embed_documents([doc.text for doc in documents])
    with chats.database.transaction():
        store.put(embedder.name, documents, vectors)
    before = store.version()
    with chats.database.transaction():
        store.put(embedder.name, documents[:1], vectors[:1])
    assert store.version() != before
    assert store.version()[0] == before[0] == 3
    assert store.count_missing(embedder.name) == 0


def test_a_message_written_after_the_newest_vector_went_is_found_by_a_warm_search(chats, topics):
    """The newest vector dropped and another written: a search that cached the table must
    still see the change ((count, max(id)) moves)."""
    meaning = MeaningSearch(chats, FakeEmbedder())
    meaning.catch_up()
    chat = chats.get_chat(topics["roof"])
    chat.session.append_message(text_message("m2", "the gutters need cleaning"))
    assert meaning.catch_up() == 1  # the newest vector
    assert chat_ids(meaning.search("gutters")) == [topics["roof"]]  # the table is cached
    chat.session.delete_messages(["m2"])
    chats.get_chat(topics["dog"]).session.append_message(text_message("m2", "the hound is hurt"))
    meaning.catch_up()
    assert [h.message_id for h in meaning.meaning_hits("injured puppy").hits] == ["m2", "m"]


def test_an_edited_message_is_embedded_again(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    chat = chats.get_chat(topics["fridge"])
    chat.session.update_message(text_message("m", "learning to play the violin"))
    assert meaning.catch_up() == 1
    assert chat_ids(meaning.search("music lessons for a string instrument", limit=1)) == [
        topics["fridge"]
    ]


def test_a_restart_catches_up_what_was_written_meanwhile(tmp_path, embedder):
    chats = Chats(tmp_path, "bob")
    meaning = MeaningSearch(chats, embedder)
    first = chats.get_chat(chats.create_chat("a").id)
    first.session.append_message(text_message("m", TOPICS["dog"]))
    assert meaning.catch_up() == 1
    second = chats.get_chat(chats.create_chat("b").id)
    second.session.append_message(text_message("m", TOPICS["roof"]))
    chats.close()  # no embedder ran for the second chat
    chats = Chats(tmp_path, "bob")
    try:
        meaning = MeaningSearch(chats, embedder)
        assert meaning.catch_up() == 1
        assert meaning.catch_up() == 0
    finally:
        chats.close()


def test_each_batch_reads_on_from_the_last_document_embedded(chats, topics, monkeypatch):
    """A catch-up of n messages in batches of 4 read every document from the first for each
    batch, and dropped stale vectors each time: it grew with the square of n (PostgreSQL,
    6,000 messages, the model aside: 80 s). Each batch now starts past the newest document
    embedded; only a pass that finds nothing there flushes the index, and then looks from
    the start (and clears stale vectors) once."""
    meaning = MeaningSearch(chats, FakeEmbedder())
    reads: list[int] = []
    store = meaning._store
    missing = store.missing
    monkeypatch.setattr(
        store, "missing", lambda model, limit, after=0: reads.append(after) or missing(
            model, limit, after=after
        )
    )  # fmt: skip
    chats.flush_index()
    assert meaning.catch_up(limit=2, batch=2) == 2
    assert meaning.catch_up(limit=2, batch=2) == 1
    # Documents 1-3: from the start, past 2; nothing past 3, nor once the index has taken
    # in what was written since; then once from the start.
    assert reads == [0, 2, 3, 3, 0]
    assert meaning.caught_up
    chats.get_chat(topics["dog"]).session.append_message(text_message("m2", "a new message"))
    reads.clear()
    assert meaning.catch_up() == 1
    assert reads[0] == 3


def test_the_worker_embeds_in_the_background(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    meaning.start()
    try:
        store = vector_store_for(chats.database)
        asyncio.run(until(lambda: len(store.table(embedder.name).keys) == 3))
        chat = chats.get_chat(topics["roof"])
        chat.session.append_message(text_message("m2", "the gutters need cleaning"))
        meaning.wake()
        asyncio.run(until(lambda: len(store.table(embedder.name).keys) == 4))
    finally:
        meaning.stop()


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="per-thread priorities: Linux")
def test_the_worker_thread_yields_the_cpu_to_the_people_chatting(chats, topics):
    """The model runs on the worker's thread outside the GIL: on a busy machine it would
    take a core from the appends and requests of the people chatting."""
    meaning = MeaningSearch(chats, FakeEmbedder())
    meaning.start()
    try:
        worker = meaning._thread
        assert worker is not None and worker.native_id is not None
        process = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        wanted = min(19, process + WORKER_NICENESS)
        asyncio.run(until(lambda: os.getpriority(os.PRIO_PROCESS, worker.native_id) == wanted))
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == process
    finally:
        meaning.stop()


class BatchTimingEmbedder(FakeEmbedder):
    """Each batch takes a while, and ``during`` runs inside it (someone writing, or not)."""

    def __init__(self, during) -> None:
        super().__init__()
        self.during = during
        self.took: list[float] = []

    def embed_documents(self, texts):
        started = time.perf_counter()
        self.during(len(self.took))
        vectors = super().embed_documents(texts)
        time.sleep(0.02)
        self.took.append(time.perf_counter() - started)
        return vectors


def _worker_rests(chats, embedder, monkeypatch, backlog: int, batches: int) -> list[float]:
    """The rests the worker takes between its ``batches`` while it embeds ``backlog``
    messages (and what is written meanwhile)."""
    chat = chats.get_chat(chats.create_chat("backlog").id)
    for index in range(backlog):
        chat.session.append_message(text_message(f"b{index}", f"backlog message {index}"))
    meaning = MeaningSearch(chats, embedder)
    rests: list[float] = []
    monkeypatch.setattr(meaning, "_rest", rests.append)
    meaning.start()
    try:
        asyncio.run(until(lambda: meaning.caught_up and len(embedder.took) == batches))
    finally:
        meaning.stop()
    return rests


def test_while_people_write_the_worker_rests_as_long_as_each_batch_took(chats, monkeypatch):
    """At half speed, a backlog being embedded takes fewer cycles from the appends beside it
    (bench/meaning_bench.py: at full durability 1.12-1.15x without the rests, 1.02-1.08x
    with them)."""
    writer = chats.get_chat(chats.create_chat("writing").id)

    def someone_writes(batch: int) -> None:
        if batch < 3:
            writer.session.append_message(text_message(f"w{batch}", f"written during {batch}"))

    embedder = BatchTimingEmbedder(someone_writes)
    rests = _worker_rests(chats, embedder, monkeypatch, backlog=12, batches=4)
    assert len(rests) == 3  # after each batch someone wrote during; not after the last
    assert all(rest >= took for rest, took in zip(rests, embedder.took, strict=False))


def test_with_nobody_writing_the_worker_never_rests_between_batches(chats, monkeypatch):
    embedder = BatchTimingEmbedder(lambda batch: None)
    assert _worker_rests(chats, embedder, monkeypatch, backlog=12, batches=3) == []


def test_a_search_can_be_kept_to_some_chats(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    with_dog = {topics["dog"], topics["roof"]}
    assert chat_ids(meaning.search("fixing a damaged puppy", chat_ids=with_dog)) == [topics["dog"]]
    without = {topics["roof"], topics["fridge"]}
    assert meaning.search("fixing a damaged puppy", chat_ids=without).hits == []


def test_a_query_about_nothing_stored_finds_nothing_by_meaning(chats, topics, embedder):
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    assert meaning.search("asdf qwer").hits == []


def test_the_cli_progress_counts_up_to_the_total(chats, topics, embedder):
    seen = []
    MeaningSearch(chats, embedder).catch_up(progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (3, 3)


@pytest.mark.sqlite_only
def test_a_vector_table_of_before_keeps_its_rows_and_never_reuses_a_dropped_id(tmp_path):
    """The table as the first schema made it, upgraded when the store opens it."""
    db = Database(tmp_path / "directory.sqlite")
    db.migrate(vector_store.COMPONENT, (vector_store._m001_vectors,))
    with db.transaction():
        db.execute(
            "INSERT INTO message_vectors (id, chat_num, message_id, digest, model, vector) "
            "VALUES (7, 1, 'm', x'00', 'model', x'01')"
        )
    store = vector_store.MessageVectorStore(db)
    assert store.version() == (1, 7)
    with db.transaction():
        db.execute("DELETE FROM message_vectors WHERE id = 7")
        db.execute(
            "INSERT INTO message_vectors (chat_num, message_id, digest, model, vector) "
            "VALUES (2, 'n', x'00', 'model', x'01')"
        )
    assert store.version() == (1, 8)  # not (1, 7) again: the pair moved
    db.close()


def test_the_walk_for_missing_vectors_reads_documents_in_their_order(chats):
    """SQLite, left to choose, scanned the full-text table and every document for each of
    its rows: a catch-up of 1,000 messages took 10 s, 10,000 never ended."""
    if not isinstance(chats.database, Database):
        pytest.skip("SQLite's plan (PostgreSQL's is its planner's, from the same index)")
    store = vector_store_for(chats.database)
    plan = chats.database.query("EXPLAIN QUERY PLAN " + store._MISSING, (*store._key, 9, "m", 4))
    steps = [row[3] for row in plan]
    assert steps[0] == "SEARCH d USING INDEX message_docs_by_doc (doc>?)", steps
    # Each text looked up by its rowid (FTS5's "=" constraint), never a scan of the table.
    assert [step for step in steps if " f " in f" {step} "] == ["SCAN f VIRTUAL TABLE INDEX 0:="]
