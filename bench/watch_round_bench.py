"""The directory watcher's round on PostgreSQL with many people online (format: bench/README.md).

    .venv/bin/python bench/watch_round_bench.py [--directories 500]

Every ``FOREIGN_POLL_S`` the watcher's thread looks at every watched directory of the process
(backend/chats/watch.py): one per person with a tab open on this node. Starts its own
PostgreSQL (durable settings, as ``storage_engines_bench``), opens that many directory scopes,
and times, side by side in interleaved rounds:

* the baseline: each directory asked its own ``data_version()`` (a round trip each), what
  every round did before the commit counters;
* the round as it runs now: the counters of all of them in one query
  (``backend.storage.commit_counters``), then a poll only where a counter moved.

Both idle (nobody committed) and with 1 % of the directories written since the last round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.chats.directory_storage import record_store_for
from backend.chats.watch import ForeignChangeWatcher
from backend.config import parse_storage
from backend.storage import commit_counters
from backend.storage.postgres import PostgresEngine, PostgresScope
from bench.storage_engines_bench import DURABLE, report
from tests.support.postgres_server import start_postgres

ROUNDS = 15


def timed(run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--directories", type=int, default=500)
    count = parser.parse_args().directories
    server = start_postgres(DURABLE)
    try:
        engine = PostgresEngine(parse_storage(server.create_database("bench_watch")))

        def watching() -> list[ForeignChangeWatcher]:
            """A node's watchers, each on a handle of its own (the two rounds timed here
            must not share a watcher: each remembers what it saw last)."""
            stores = [record_store_for(PostgresScope(engine, f"user-{n}")) for n in range(count)]
            made = [
                ForeignChangeWatcher(s.db, s, f"user-{n}", lambda _: None)
                for n, s in enumerate(stores)
            ]
            for watcher in made:
                watcher._baseline()
            return made

        asked, counted = watching(), watching()
        there = [record_store_for(PostgresScope(engine, f"user-{n}")) for n in range(count)]
        written = max(1, count // 100)

        def write_some(round_number: int) -> None:
            for n in range(written):
                store = there[(round_number * written + n) % count]
                with store.db.transaction():
                    store.insert(f"c{round_number}-{n}", "T", 1)

        def each_asked() -> None:
            for watcher in asked:
                watcher.poll_round()

        def counters_first() -> None:
            counters = commit_counters([w.scope for w in counted])
            for watcher, counter in zip(counted, counters, strict=True):
                watcher.poll_round(counter)

        counters_first()  # each watcher's first counter
        samples: dict[str, list[float]] = {}
        for round_number in range(ROUNDS):
            for label, busy in (("idle", False), ("one_percent_written", True)):
                pair = [("each_asked", each_asked), ("counters_first", counters_first)]
                if busy:  # both see the same commits
                    write_some(round_number)
                for name, run in pair[:: 1 if round_number % 2 else -1]:
                    samples.setdefault(f"{label}/{name}", []).append(timed(run))
        for label in ("idle", "one_percent_written"):
            old = statistics.median(samples[f"{label}/each_asked"])
            new = statistics.median(samples[f"{label}/counters_first"])
            report(
                f"watch_round_{label}",
                new / old,
                "<1",
                f"{count} watched directories on PostgreSQL: counters first {new:.1f} ms a "
                f"round vs each asked {old:.1f} ms (medians of {ROUNDS} interleaved rounds)",
            )
        engine.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
