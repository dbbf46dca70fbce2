"""Per-statement costs of the storage seam on both engines, side by side (format: bench/README.md).

    .venv/bin/python bench/storage_engines_bench.py

Starts its own PostgreSQL (tests/support/postgres_server.py) with durable settings (fsync and
full-page writes on), and measures through the engine-neutral scopes the stores use:

1. a point read (``query_one`` by primary key);
2. a one-row write outside a transaction (on PostgreSQL: ``BEGIN`` + the scope's version bump
   in one round trip, the ``INSERT``, ``COMMIT``);
3. a transaction of ten one-row inserts;

each as PostgreSQL ``synchronous_commit=off`` against SQLite ``synchronous=normal`` (a killed
process loses nothing on either; an OS crash may lose the newest commits on both), and the
writes again as ``synchronous_commit=on`` against ``synchronous=full`` (equal durability: every
commit flushed). Rounds are interleaved so machine noise hits both engines alike; the figure
per metric is the median of per-operation medians over the rounds.

Then the conversation cases, through ``Sessions`` on the same server
(``bench/conversation_costs.py``): WAL bytes per streamed 3,000-word reply over its size,
WAL bytes per appended message at 1,000 vs 10 messages, and the newest 20 messages at 100,000
vs 1,000 messages.

    .venv/bin/python bench/storage_engines_bench.py --skip-conversations   # the seam only
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.config import parse_storage
from backend.storage import Database, Scope
from backend.storage.postgres import PostgresEngine, PostgresScope
from bench import conversation_costs
from tests.support.postgres_server import start_postgres

ROUNDS = 7
OPS_PER_ROUND = 200
DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on"}
_CREATE = "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)"
_INSERT = "INSERT INTO kv (k, v) VALUES (?, ?)"
_READ = "SELECT v FROM kv WHERE k = ?"
_VALUE = "x" * 200


def report(metric: str, ratio: float, goal: str, details: str) -> None:
    print(f"{metric}: ratio={ratio:.2f} goal={goal} ({details})", flush=True)


def per_op_us(run: Callable[[int], None], ops: int) -> float:
    start = time.perf_counter()
    for n in range(ops):
        run(n)
    return (time.perf_counter() - start) / ops * 1e6


def workloads(scope: Scope) -> dict[str, Callable[[int], None]]:
    keys = count()

    def read(n: int) -> None:
        scope.query_one(_READ, (f"seed-{n % 100}",))

    def write(n: int) -> None:
        scope.write(_INSERT, (f"k-{next(keys)}", _VALUE))

    def transaction_of_ten(n: int) -> None:
        with scope.transaction():
            for _ in range(10):
                scope.execute(_INSERT, (f"k-{next(keys)}", _VALUE))

    return {"read": read, "write": write, "transaction_of_ten": transaction_of_ten}


def measure(pairs: dict[str, tuple[Scope, Scope]]) -> dict[str, dict[str, float]]:
    """{label: {workload: median µs per op}} for every (sqlite, postgresql) pair, interleaved."""
    samples: dict[str, dict[str, list[float]]] = {}
    loads = {
        label: (workloads(sqlite), workloads(postgres))
        for label, (sqlite, postgres) in pairs.items()
    }
    for _ in range(ROUNDS):
        for label, (on_sqlite, on_postgres) in loads.items():
            for name in on_sqlite:
                ops = OPS_PER_ROUND // (10 if name == "transaction_of_ten" else 1)
                for engine, load in (("sqlite", on_sqlite), ("postgresql", on_postgres)):
                    key = f"{label}/{engine}"
                    samples.setdefault(key, {}).setdefault(name, []).append(
                        per_op_us(load[name], ops)
                    )
    return {
        key: {name: statistics.median(values) for name, values in by_name.items()}
        for key, by_name in samples.items()
    }


def prepared(scope: Scope) -> Scope:
    scope.execute(_CREATE)
    with scope.transaction():
        for n in range(100):
            scope.execute(_INSERT, (f"seed-{n}", _VALUE))
    return scope


def main() -> None:
    started = time.perf_counter()
    server = start_postgres(DURABLE)
    engines: list[PostgresEngine] = []
    try:
        with tempfile.TemporaryDirectory(prefix="engines-bench-") as name:
            folder = Path(name)
            if "--skip-conversations" not in sys.argv:
                url = server.create_database("bench_conversations")
                conversation_costs.run(url, folder, report)
            pairs: dict[str, tuple[Scope, Scope]] = {}
            for label, sqlite_level, pg_level in (
                ("async", "normal", "off"),
                ("durable", "full", "on"),
            ):
                url = server.create_database(f"bench_{label}")
                location = parse_storage(f"{url}?options=-csynchronous_commit%3D{pg_level}")
                engine = PostgresEngine(location)  # type: ignore[arg-type]
                engines.append(engine)
                pairs[label] = (
                    prepared(Database(folder / f"{label}.sqlite", synchronous=sqlite_level)),
                    prepared(PostgresScope(engine, label)),
                )
            results = measure(pairs)
    finally:
        for engine in engines:
            engine.close()
        server.stop()
    goals = {"read": "reported", "write": "reported", "transaction_of_ten": "reported"}
    for label, (sqlite_name, pg_name) in {
        "async": ("synchronous=normal", "synchronous_commit=off"),
        "durable": ("synchronous=full", "synchronous_commit=on"),
    }.items():
        on_sqlite, on_postgres = results[f"{label}/sqlite"], results[f"{label}/postgresql"]
        for name, goal in goals.items():
            if label == "durable" and name == "read":
                continue  # a read does not depend on the commit level
            report(
                f"postgresql_vs_sqlite_{name}_{label}",
                on_postgres[name] / on_sqlite[name],
                goal,
                f"PostgreSQL {pg_name} {on_postgres[name]:.0f} us per op vs SQLite "
                f"{sqlite_name} {on_sqlite[name]:.0f} us",
            )
    print(f"# total {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
