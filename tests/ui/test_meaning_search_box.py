"""The sidebar's message search by words and by meaning (issue 29): a paraphrase finds the
chat, exact words stay first, shared chats' hits stay labelled, "still indexing…" while the
vectors catch up; the query is embedded off the event loop and only once typing settled.

A deterministic embedder stands in for the model (``tests/meaning/fake_embedder.py``); the
real one is exercised in ``tests/meaning/test_imported_paraphrase.py``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.accounts import CONSOLE_ACTOR
from backend.config import PostgresLocation, Settings, StorageChoice
from backend.sharing import ChatRef
from chatsapp import services as services_module
from chatsapp.services import Release, Services, offload
from chatsapp.states.newest import search_newest
from chatsapp.states.rows import HitRow
from chatsapp.states.search import (
    INDEXED_POLL_S,
    INDEXED_WAIT_S,
    Found,
    message_search,
    until_indexed,
)
from tests.meaning.fake_embedder import FakeEmbedder
from tests.support.deadlines import until

PARAPHRASE = "fixing a damaged puppy"
DOG = "my dog is broken, how can I repair it"


class GatedEmbedder(FakeEmbedder):
    """Embeds documents only once the test opens the gate (vectors "still catching up")."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed_documents(self, texts):
        self.gate.wait()
        return super().embed_documents(texts)


@pytest.fixture
def embedder() -> GatedEmbedder:
    return GatedEmbedder()


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: GatedEmbedder, storage: StorageChoice
) -> Iterator[Services]:
    """The app's services with ``embedder``, on each engine."""
    value = storage.url if isinstance(storage, PostgresLocation) else storage
    monkeypatch.setenv("CHATS_STORAGE", value)
    settings = Settings.from_env(
        {
            "CHATS_DATA_DIR": str(tmp_path / "data"),
            "CHATS_PASSWORD_HASH_PROFILE": "cheapest",
            "CHATS_STORAGE": value,
        }
    )
    made = Services(settings, embedder=lambda: embedder)
    monkeypatch.setattr(services_module, "_services", made)
    yield made
    embedder.gate.set()  # a worker waiting on it must be able to stop
    asyncio.run(made.aclose())


def write(services: Services, user_id: str, title: str, text: str) -> str:
    chats = services.directory(user_id)
    chat_id = chats.create_chat(title).id
    chats.get_chat(chat_id).session.append_message(
        {"id": "m0", "role": "user", "parts": [{"type": "text", "text": text}]}
    )
    return chat_id


async def always(_query: str) -> bool:
    return True


async def search(services: Services, user_id: str, query: str) -> tuple[Found, list[HitRow]]:
    """One settled search: what it found, and the words' rows shown before it."""
    shown: list[HitRow] = []

    async def show_words(_query: str, rows: list[HitRow]) -> None:
        shown.extend(rows)

    meaning = await offload(services.meaning, user_id)
    chats = services.directory(user_id)
    return await message_search(chats, user_id, query, meaning, always, show_words), shown


async def complete_search(services: Services, user_id: str, query: str) -> Found:
    """Search again until the worker caught up (the answer is no longer incomplete)."""
    found: list[Found] = []

    async def caught_up() -> bool:
        found[:] = [(await search(services, user_id, query))[0]]
        return not found[0].incomplete

    await until(caught_up, what="the vectors caught up")
    return found[0]


def chat_ids(found: Found) -> list[str]:
    return [row.chat_id for row in found.rows]


def test_a_paraphrase_finds_the_chat_after_the_exact_words_and_says_still_indexing_until_then(
    served: Services, embedder: GatedEmbedder
):
    dog = write(served, "local", "Dog", DOG)
    exact = write(served, "local", "Puppy", "fixing a damaged puppy takes patience")
    write(served, "local", "Roof", "painting the roof blue")

    before, shown = asyncio.run(search(served, "local", PARAPHRASE))
    assert before.incomplete  # no vector yet: words alone, and the box says so
    assert chat_ids(before) == [exact]
    assert [row.chat_id for row in shown] == [exact]  # the words were shown first

    embedder.gate.set()
    after = asyncio.run(complete_search(served, "local", PARAPHRASE))
    assert chat_ids(after) == [exact, dog]
    assert after.rows[1].title == "Dog"


def test_shared_chats_keep_their_label_and_the_owners_other_chats_stay_out(
    served: Services, embedder: GatedEmbedder
):
    embedder.gate.set()
    accounts = served.accounts()
    owner = accounts.create_user(CONSOLE_ACTOR, "olga", "a long enough password", "admin")
    pat = accounts.create_user(owner.id, "pat", "a long enough password")
    shared = write(served, owner.id, "Vet", "fixing a damaged puppy at the vet")
    write(served, owner.id, "Hound", DOG)  # the owner's, not shared: never found by pat
    mine = write(served, pat.id, "Mine", "my puppy is hurt, can I mend it")
    served.sharing().share(owner, ChatRef(owner_id=owner.id, chat_id=shared), "pat", "viewer")

    found = asyncio.run(complete_search(served, pat.id, PARAPHRASE))

    assert [(row.chat_id, row.shared_by) for row in found.rows] == [(shared, "olga"), (mine, "")]


def test_a_query_typed_past_is_never_embedded_and_embedding_runs_off_the_event_loop(
    served: Services, embedder: GatedEmbedder
):
    """Keystrokes land while the words of "fixing" are searched: only the settled query is
    embedded, the words of each are searched, and the newest query's hits are shown."""
    embedder.gate.set()
    dog = write(served, "local", "Dog", DOG)
    served.meaning("local").catch_up()  # type: ignore[union-attr]
    tab = {"query": "fixing", "shown": [], "searched": []}
    meaning = served.meaning("local")
    chats = served.directory("local")

    async def take(searched: str | None) -> str | None:
        return None if tab["query"] == searched else tab["query"]

    async def still_current(query: str) -> bool:
        if tab["query"] == "fixing":
            tab["query"] = PARAPHRASE  # typed while the words of "fixing" were searched
        return query == tab["query"]

    async def run(query: str) -> Found:
        tab["searched"].append(query)
        return await message_search(chats, "local", query, meaning, still_current, show)

    async def show(query: str, found: object) -> None:
        if query == tab["query"]:
            tab["shown"] = found.rows if isinstance(found, Found) else found

    runs = asyncio.run(search_newest(take, run, show))

    assert runs == 2 and tab["searched"] == ["fixing", PARAPHRASE]
    assert embedder.queries == [PARAPHRASE]
    assert [row.chat_id for row in tab["shown"]] == [dog]
    assert threading.main_thread() not in embedder.query_threads  # never on the loop's thread


def test_a_query_of_a_few_letters_is_searched_by_words_only(
    served: Services, embedder: GatedEmbedder
):
    embedder.gate.set()
    chat_id = write(served, "local", "Dog", "ok dog")
    found, _shown = asyncio.run(search(served, "local", "ok"))
    assert chat_ids(found) == [chat_id]
    assert embedder.queries == []


class Indexing:
    """A meaning search whose vectors catch up after ``looks`` looks at it."""

    def __init__(self, looks: int) -> None:
        self.looks_left = looks

    @property
    def caught_up(self) -> bool:
        self.looks_left -= 1
        return self.looks_left < 0


def test_a_tab_that_said_still_indexing_learns_when_the_vectors_caught_up():
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    assert asyncio.run(until_indexed(Indexing(3), sleep=sleep))  # type: ignore[arg-type]
    assert slept == [INDEXED_POLL_S] * 3
    slept.clear()
    never = Indexing(10**6)
    assert not asyncio.run(until_indexed(never, sleep=sleep))  # type: ignore[arg-type]
    assert sum(slept) == pytest.approx(INDEXED_WAIT_S)  # then it leaves it to the next search


def test_serving_builds_no_embedder_until_a_search_by_meaning_and_a_release_stops_its_worker(
    tmp_path: Path,
):
    built: list[FakeEmbedder] = []

    def factory() -> FakeEmbedder:
        built.append(FakeEmbedder())
        return built[-1]

    services = Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}), embedder=factory)
    try:
        write(services, "local", "Dog", DOG)
        services.runtime("local")
        assert built == []  # opening, writing and a runtime never made a model
        assert services.meaning("local") is not None and len(built) == 1
        assert any(t.name == "meaning" for t in threading.enumerate())
        assert asyncio.run(services.release_idle("local", 0.0)) is Release.RELEASED
        assert not any(t.name == "meaning" for t in threading.enumerate())
    finally:
        asyncio.run(services.aclose())


def test_with_the_embedder_off_the_search_is_by_words_and_complete(tmp_path: Path, monkeypatch):
    settings = Settings.from_env({"CHATS_DATA_DIR": str(tmp_path), "CHATS_EMBEDDER": "off"})
    services = Services(settings)
    monkeypatch.setattr(services_module, "_services", services)
    try:
        write(services, "local", "Dog", DOG)
        assert services.meaning("local") is None
        found, _shown = asyncio.run(search(services, "local", "dog"))
        assert len(found.rows) == 1 and not found.incomplete
    finally:
        asyncio.run(services.aclose())
