"""``chats import`` embeds what it imported (the real bundled model, offline), so a paraphrase
of an imported message is found at once; with ``--no-embed`` the next ``chats search``
catches up. The app's worker picks up what another process imported, unasked. Both engines:
the export is made from a data folder (SQLite), then imported where ``CHATS_STORAGE`` says."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from backend.chats import Chats
from backend.chats.meaning_search import MeaningSearch
from backend.chats.vector_store import vector_store_for
from backend.cli import cli
from backend.config import StorageChoice, storage_root
from backend.meaning import BundledEmbedder
from tests.meaning.fake_embedder import FakeEmbedder
from tests.support.deadlines import WAIT_S, until

pytestmark = pytest.mark.usefixtures("on_engine")  # both engines (tests/meaning/conftest.py)

DOG = "my dog is broken, how can I repair it"
PARAPHRASE = "fixing a damaged puppy"


def run(data_dir: Path, *args: str, storage: str | None = None) -> Result:
    """``chats ...`` on ``data_dir`` (and on ``storage``, if given, over ``CHATS_STORAGE``)."""
    env = {"CHATS_DATA_DIR": str(data_dir), "CHATS_EMBEDDER": "bundled"}
    if os.environ.get("CHATS_STORAGE", "").startswith("postgresql"):
        # There the command asks the accounts who ``--user`` is; ``none``: nobody signs in.
        env["CHATS_AUTH"] = "none"
    if storage is not None:
        env["CHATS_STORAGE"] = storage
    runner = CliRunner(env=env)
    result = runner.invoke(cli, list(args), prog_name="chats")
    assert result.exit_code == 0, result.output
    return result


def message(text: str, message_id: str = "m") -> dict:
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


@pytest.fixture
def export(tmp_path: Path, on_engine: StorageChoice, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A chat about a broken dog, exported by ``chats export`` from another data folder (on
    SQLite, whatever the test's engine: on PostgreSQL every command names the same root)."""
    source = tmp_path / "source"
    with monkeypatch.context() as files:
        files.setenv("CHATS_STORAGE", "sqlite")
        with Chats(source, "local") as chats:
            chat_id = chats.create_chat("Dog").id
            chats.get_chat(chat_id).session.append_message(message(DOG))
            chats.get_chat(chats.create_chat("Roof").id).session.append_message(
                message("painting the roof blue")
            )
        out = tmp_path / "export.zip"
        run(source, "export", "--user", "local", "--out", str(out), storage="sqlite")
    return out


@pytest.fixture
def missing_vectors(on_engine: StorageChoice):
    """``missing_vectors(data_dir)``: the messages of ``local``'s directory without a vector,
    the directory the commands opened (under the data folder, or PostgreSQL's fixed root)."""

    def count(data_dir: Path) -> int:
        with Chats(storage_root(data_dir, on_engine), "local") as chats:
            chats.flush_index()
            return vector_store_for(chats.database).count_missing(BundledEmbedder.name)

    return count


def found(data_dir: Path) -> list[str]:
    result = run(data_dir, "search", "--user", "local", PARAPHRASE, "--json")
    return [hit["snippet"] for hit in json.loads(result.stdout)]


def test_an_imported_paraphrase_is_found_and_the_import_embedded_it(
    tmp_path, export, missing_vectors
):
    target = tmp_path / "target"
    run(target, "import", "--user", "local", str(export))
    assert missing_vectors(target) == 0  # the import embedded what it imported
    assert found(target) == [DOG]


def test_with_no_embed_the_next_search_catches_up(tmp_path, export, missing_vectors):
    target = tmp_path / "target"
    run(target, "import", "--user", "local", str(export), "--no-embed")
    assert missing_vectors(target) == 2
    assert found(target) == [DOG]
    assert missing_vectors(target) == 0


class HeldEmbedder(FakeEmbedder):
    """Embeds documents only once ``go`` is set; ``called`` is set when it is first asked."""

    def __init__(self) -> None:
        super().__init__()
        self.called = threading.Event()
        self.go = threading.Event()

    def embed_documents(self, texts):
        if texts:
            self.called.set()
            self.go.wait(timeout=WAIT_S)
        return super().embed_documents(texts)


def test_what_the_worker_saw_another_process_write_keeps_a_search_incomplete_until_stored(
    tmp_path,
):
    embedder = HeldEmbedder()
    embedder.go.set()
    with Chats(tmp_path, "local") as app_side:
        meaning = MeaningSearch(app_side, embedder)
        meaning.start()
        try:
            asyncio.run(until(lambda: meaning.search("dog").complete))  # caught up: idle
            embedder.go.clear()
            embedder.called.clear()
            with Chats(tmp_path, "local") as other_process:
                chat_id = other_process.create_chat("Dog").id
                other_process.get_chat(chat_id).session.append_message(message(DOG))
                other_process.flush_index()
            asyncio.run(until(embedder.called.is_set))  # the worker saw it and is embedding
            assert not meaning.search(PARAPHRASE).complete
            embedder.go.set()
            asyncio.run(until(lambda: meaning.search(PARAPHRASE).complete))
            assert [h.chat_id for h in meaning.search(PARAPHRASE).hits] == [chat_id]
        finally:
            embedder.go.set()
            meaning.stop()


def test_the_apps_worker_embeds_what_another_process_wrote(tmp_path):
    """Another connection to the directory (the CLI's import, in its own process) writes; the
    idle worker notices the commit by itself, with no wake."""
    embedder = FakeEmbedder()
    with Chats(tmp_path, "local") as app_side:
        meaning = MeaningSearch(app_side, embedder)
        meaning.start()
        try:
            asyncio.run(until(lambda: meaning.search("dog").complete))  # caught up: idle
            with Chats(tmp_path, "local") as other_process:
                chat_id = other_process.create_chat("Dog").id
                other_process.get_chat(chat_id).session.append_message(message(DOG))
                other_process.flush_index()
            asyncio.run(until(lambda: len(embedder.documents) == 1))
            # embedded, then stored in its own commit: the search is complete once it is stored
            asyncio.run(until(lambda: meaning.search(PARAPHRASE).complete))
            assert [h.chat_id for h in meaning.search(PARAPHRASE).hits] == [chat_id]
        finally:
            meaning.stop()
