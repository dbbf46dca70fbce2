"""The chat index on both engines, per operation, side by side (format: bench/README.md).

    .venv/bin/python bench/chat_index_engines_bench.py

Starts its own PostgreSQL (durable settings, as ``storage_engines_bench``) and fills one
person's directory with 1,000 chats on each engine, through the stores ``Chats`` runs
(``ChatRecordStore`` on a ``directory.sqlite``, ``PgChatRecordStore`` on the scope named as
it). Each figure is the median over interleaved rounds of the per-operation median:

* ``watch_poll_idle``: one poll of the directory watcher when nobody else committed (what
  every watched directory costs every ``FOREIGN_POLL_S``: the version read, then the marks);
* ``watch_poll_foreign``: a poll after another handle committed a turn (version, three reads
  past the marks, new marks);
* ``list_first_page``: the sidebar's first 50 rows; ``title_search``: a prefix title search
  (limit 20); ``record_turn``: a turn's row update in its own transaction;
* ``directory_open``: ``Chats(root, user)`` opened and closed (every store's migration check,
  the sweep, the stale-file sweep, index repair, the archive policy), an empty directory, on
  a pool already open (the app's services hold it).

PostgreSQL runs ``synchronous_commit=off`` against SQLite ``synchronous=normal`` (a killed
process loses nothing on either).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.chats import Chats
from backend.chats.chat_records import ChatRecordStore
from backend.chats.directory_storage import record_store_for, scope_name
from backend.chats.text import prefix_query
from backend.chats.watch import ForeignChangeWatcher
from backend.config import parse_storage
from backend.storage import Database
from backend.storage.engines import PostgresStorage
from backend.storage.postgres import PostgresScope
from bench.storage_engines_bench import DURABLE, per_op_us, report
from tests.support.postgres_server import start_postgres

ROUNDS = 7
OPS_PER_ROUND = 200
CHATS = 1_000
WORDS = ("lisbon", "trip", "budget", "notes", "draft", "porto", "recipe", "meeting")


class Directory:
    """One person's chat index on one engine: the app's handle and another process's."""

    def __init__(
        self, here: ChatRecordStore, there: ChatRecordStore, root: Path, storage: str
    ) -> None:
        self.here, self.there = here, there
        self.root, self.storage = root, storage
        self.watcher = ForeignChangeWatcher(here.db, here, "bench", lambda _: None)
        with here.db.transaction():
            for n in range(CHATS):
                title = f"{WORDS[n % 8]} {WORDS[(n * 3) % 8]} {n}"
                here.insert(f"chat-{n:05d}", title, 1_000 + n)
        self.watcher._baseline()
        self.clock = 10_000
        self.query = prefix_query("lisbon")
        assert self.query is not None

    def workloads(self) -> dict[str, Callable[[int], None]]:
        def poll_idle(n: int) -> None:
            self.watcher.poll()

        def poll_foreign(n: int) -> None:
            self._turn(self.there, n)
            assert self.watcher.poll()

        def list_page(n: int) -> None:
            self.here.list_live(50, None)

        def title_search(n: int) -> None:
            assert self.query is not None
            self.here.search_titles(self.query, 20)

        def record_turn(n: int) -> None:
            self._turn(self.here, n)

        def directory_open(n: int) -> None:
            os.environ["CHATS_STORAGE"] = self.storage  # what Chats(root, user) reads
            Chats(self.root, "opened").close()

        return {
            "watch_poll_idle": poll_idle,
            "watch_poll_foreign": poll_foreign,
            "list_first_page": list_page,
            "title_search": title_search,
            "record_turn": record_turn,
            "directory_open": directory_open,
        }

    def _turn(self, store: ChatRecordStore, n: int) -> None:
        self.clock += 1
        record = store.load(f"chat-{n % CHATS:05d}")
        assert record is not None
        with store.db.transaction():
            store.record_turn(record, "a preview", self.clock)


def measure(sqlite: Directory, postgres: Directory) -> dict[str, dict[str, float]]:
    samples: dict[str, dict[str, list[float]]] = {"sqlite": {}, "postgresql": {}}
    loads = {"sqlite": sqlite.workloads(), "postgresql": postgres.workloads()}
    for _ in range(ROUNDS):
        for name in loads["sqlite"]:
            for engine, load in loads.items():
                ops = OPS_PER_ROUND // (10 if name == "directory_open" else 1)
                samples[engine].setdefault(name, []).append(per_op_us(load[name], ops))
    return {
        engine: {name: statistics.median(values) for name, values in by_name.items()}
        for engine, by_name in samples.items()
    }


def main() -> None:
    started = time.perf_counter()
    server = start_postgres(DURABLE)
    service: PostgresStorage | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="chat-index-bench-") as name:
            file = Path(name) / "directory.sqlite"
            sqlite = Directory(
                record_store_for(Database(file, synchronous="normal")),
                record_store_for(Database(file, synchronous="normal")),
                Path(name),
                "sqlite",
            )
            url = f"{server.create_database('bench_chat_index')}?options=-csynchronous_commit%3Doff"
            # The app's services keep the URL's pool open (backend.storage.engines): a
            # directory opens on a warm pool, as here.
            service = PostgresStorage(parse_storage(url))  # type: ignore[arg-type]
            engine = service.engine
            postgres = Directory(
                record_store_for(PostgresScope(engine, scope_name(file))),
                record_store_for(PostgresScope(engine, scope_name(file))),
                Path(name),
                url,
            )
            results = measure(sqlite, postgres)
    finally:
        if service is not None:
            service.close()
        server.stop()
    for name, on_sqlite in results["sqlite"].items():
        on_postgres = results["postgresql"][name]
        report(
            f"chat_index_{name}_postgresql_vs_sqlite",
            on_postgres / on_sqlite,
            "reported",
            f"PostgreSQL {on_postgres:.0f} us per op vs SQLite {on_sqlite:.0f} us, {CHATS} chats",
        )
    print(f"# total {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
