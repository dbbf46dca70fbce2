"""Search by meaning gives the same hits on both engines (differential).

The same history (chats created, messages written, one edited, one deleted, a chat deleted)
is written into a SQLite directory and into a PostgreSQL one, each embedded by the same real
model (``BundledEmbedder``, offline); every query must then give the same meaning hits (same
messages, same order, same snippets, the same scores: both engines keep the same int8 bytes)
and the same fused hits (each engine's own full-text ranking, fused with those). Chat ids are
minted per directory, so hits are compared by chat title and message id.

Runs on the PostgreSQL leg of the ``storage`` parametrisation (it needs the server), and
builds its SQLite directory itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chats import Chats
from backend.chats.meaning_search import MeaningSearch
from backend.chats.values import ChatHit
from backend.chats.vector_store import vector_store_for
from backend.config import PostgresLocation, StorageChoice
from backend.meaning import BundledEmbedder, Embedder
from tests.chats.conftest import text_message
from tests.conftest import ROOT
from tests.support.table_ownership import sql_mentions

CHATS = {
    "Dog": ["my dog is broken, how can I repair it", "the vet said to keep him warm"],
    "Roof": ["painting the roof blue", "the gutters leak when it rains"],
    "Fridge": ["what does it cost to buy a new refrigerator"],
    "Bread": ["my sourdough loaf came out flat", "rye flour needs more water"],
    "Kayak": ["we paddle the kayak north along the coast"],
    "Money": ["the kayak cost 900 euros"],
    "Pets": ["our puppy chewed the sofa again", "the cat scratched the new armchair"],
    "Lake": ["renting a canoe for the lake trip", "the boat hire opens at nine"],
    "Gone": ["painting the fence green this weekend"],
}
EDITED = ("Fridge", "m0", "learning to play the violin")
DELETED = ("Roof", "m1")
DELETED_CHAT = "Gone"
QUERIES = (
    "fixing a damaged puppy",
    "music lessons for a string instrument",
    "changing the colour of a house top",
    "baking bread at home",
    "kayak",
    "how much did the boat cost",
    "roof blue",
    "my pet damaged the furniture",
    "a boat trip on the water",
    "rain water",
    "asdf qwer",
)
Seen = list[tuple[str, str, str, float]]
"""``(chat title, message id, snippet, rank)`` of each hit, best first."""


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture
def postgresql(storage: StorageChoice) -> PostgresLocation:
    if not isinstance(storage, PostgresLocation):
        pytest.skip("a PostgreSQL test (the twin, or the twin against SQLite)")
    return storage


def seen(chats: Chats, hits: list[ChatHit], *, words: bool) -> Seen:
    """Hits by title; a words hit's rank is each engine's own measure, so it is left out."""
    titles = {chat.id: chat.title for chat in chats.list_chats()}
    return [
        (titles[hit.chat_id], hit.message_id, hit.snippet, 0.0 if words else hit.rank)
        for hit in hits
    ]


def answers(root: Path, embedder: Embedder) -> dict[str, tuple[Seen, Seen, Seen]]:
    """Write the history into a directory under ``root`` on ``CHATS_STORAGE``'s engine, embed
    it, and answer every query: ``(meaning hits, fused hits, fused hits of two chats)``."""
    with Chats(root, "alice") as chats:
        ids = {}
        for title, texts in CHATS.items():
            chat = chats.get_chat(chats.create_chat(title).id)
            for number, text in enumerate(texts):
                chat.session.append_message(text_message(f"m{number}", text))
            ids[title] = chat.id
        meaning = MeaningSearch(chats, embedder)
        assert meaning.catch_up() == sum(len(texts) for texts in CHATS.values())
        title, message_id, text = EDITED
        chats.get_chat(ids[title]).session.update_message(text_message(message_id, text))
        chats.get_chat(ids[DELETED[0]]).session.delete_messages([DELETED[1]])
        chats.delete_chat(ids[DELETED_CHAT])
        assert meaning.catch_up() == 1  # the edited message only
        two = {ids["Dog"], ids["Kayak"]}
        found = {}
        for query in QUERIES:
            by_meaning = meaning.meaning_hits(query)
            fused = meaning.search(query)
            kept = meaning.search(query, chat_ids=two)
            assert by_meaning.complete and fused.complete and kept.complete
            found[query] = (
                seen(chats, by_meaning.hits, words=False),
                seen(chats, fused.hits, words=True),
                seen(chats, kept.hits, words=True),
            )
        return found


def test_the_same_history_gives_the_same_meaning_hits_on_both_engines(
    postgresql: PostgresLocation,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    embedder: BundledEmbedder,
):
    on_postgresql = answers(tmp_path / "postgresql", embedder)
    monkeypatch.setenv("CHATS_STORAGE", "sqlite")
    on_sqlite = answers(tmp_path / "sqlite", embedder)
    assert on_postgresql == on_sqlite
    # The comparison compares something: paraphrases found by meaning alone, several hits
    # ranked by meaning, the edit re-embedded, the removals gone, the kept chats kept.
    assert on_sqlite["fixing a damaged puppy"][1][0][:2] == ("Dog", "m0")
    assert on_sqlite["music lessons for a string instrument"][1][0][:2] == ("Fridge", "m0")
    assert len(on_sqlite["a boat trip on the water"][0]) >= 3
    hits = [hit for answer in on_sqlite.values() for ranking in answer for hit in ranking]
    assert not [hit for hit in hits if hit[0] == DELETED_CHAT or hit[:2] == DELETED]
    assert {hit[0] for answer in on_sqlite.values() for hit in answer[2]} == {"Dog", "Kayak"}
    assert on_sqlite["asdf qwer"] == ([], [], [])


@pytest.mark.fresh_schema  # lists the tables
def test_the_postgresql_twin_makes_one_table_only_the_chats_package_names(
    postgresql: PostgresLocation, tmp_path: Path
):
    import psycopg

    def tables() -> set[str]:
        with psycopg.connect(postgresql.url) as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        return {name for (name,) in rows}

    with Chats(tmp_path, "alice") as chats:
        before = tables()
        vector_store_for(chats.database)
        made = tables() - before
    assert made == {"message_vectors"}
    assert sql_mentions(made, ROOT / "backend" / "chats") == []
