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

Then the conversation cases, through ``Sessions`` on the same server, the five of issue 26
with their goals:

* ``durable_append_postgresql_vs_sqlite`` (<= 2): ``Session.append_message`` on PostgreSQL
  ``synchronous_commit=on`` (fsync on) against SQLite ``CHATS_SQLITE_SYNCHRONOUS=full``;
* from ``bench/conversation_costs.py``: WAL bytes per streamed 3,000-word reply over its size
  (<= 3), WAL bytes per appended message at 1,000 vs 10 messages (<= 1.2), and the newest 20
  messages at 100,000 vs 1,000 messages (<= 1.5);
* from ``bench/search_engines_bench.py`` (its directory case, reused as it is): cross-chat
  search p95 over 500 chats x 200 messages, PostgreSQL vs SQLite (<= 3).

    .venv/bin/python bench/storage_engines_bench.py --skip-conversations   # the seam only
    .venv/bin/python bench/storage_engines_bench.py --durable-append-only  # its first case only

An append on PostgreSQL is one round trip (``BEGIN``, one statement doing the whole append
behind the scope's guarded version bump, ``COMMIT``: backend/sessions/pg_writes.py); it was
three (``BEGIN`` + bump + version read, the ``INSERT``, ``COMMIT``). On a loaded machine
every round trip waits for two processes to be scheduled, on top of the commit's flush.
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
from backend.sessions import Sessions
from backend.storage import Database, Scope
from backend.storage.durability import set_default_synchronous
from backend.storage.postgres import PostgresEngine, PostgresScope
from bench import conversation_costs, search_engines_bench
from bench.sessions_bench import small_messages
from tests.support.postgres_server import start_postgres

ROUNDS = 7
OPS_PER_ROUND = 200
DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on"}
_CREATE = "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL)"
_INSERT = "INSERT INTO kv (k, v) VALUES (?, ?)"
_READ = "SELECT v FROM kv WHERE k = ?"
_VALUE = "x" * 200
SEARCH_CHATS = 500
SEARCH_MESSAGES = 200


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


def durable_append(url: str, folder: Path) -> None:
    """``durable_append_postgresql_vs_sqlite``: equal durability, every commit flushed."""
    previous = set_default_synchronous("full")
    try:
        on_sqlite = Sessions(folder / "durable-append.sqlite")
    finally:
        set_default_synchronous(previous)
    with conversation_costs.on_postgresql(url):
        on_postgres = Sessions(folder / "durable-append-pg.sqlite")
    sides = {"sqlite": on_sqlite.session(), "postgresql": on_postgres.session()}
    make = small_messages()
    for session in sides.values():
        session.append_message(make())  # the tail is read once per handle lifetime
    samples: dict[str, list[float]] = {name: [] for name in sides}
    for round_index in range(ROUNDS):
        order = list(sides.items())[:: 1 if round_index % 2 else -1]
        for name, session in order:
            samples[name].append(
                per_op_us(lambda n, s=session: s.append_message(make()), OPS_PER_ROUND // 2)
            )
    on_sqlite.close()
    on_postgres.close()
    pg, lite = (statistics.median(samples[name]) for name in ("postgresql", "sqlite"))
    report(
        "durable_append_postgresql_vs_sqlite",
        pg / lite,
        "<=2",
        f"Session.append_message: PostgreSQL synchronous_commit=on {pg:.0f} us vs SQLite "
        f"synchronous=full {lite:.0f} us (medians of {ROUNDS} interleaved rounds)",
    )


def cross_chat_search(url: str, folder: Path) -> None:
    """``directory_search_p95_pg_vs_sqlite``: search_engines_bench's directory case."""
    texts = search_engines_bench.messages(SEARCH_CHATS, SEARCH_MESSAGES)
    per_chat = [
        texts[chat * SEARCH_MESSAGES : (chat + 1) * SEARCH_MESSAGES] for chat in range(SEARCH_CHATS)
    ]
    search_engines_bench.directory_case(url, folder, per_chat, 0)


def prepared(scope: Scope) -> Scope:
    scope.execute(_CREATE)
    with scope.transaction():
        for n in range(100):
            scope.execute(_INSERT, (f"seed-{n}", _VALUE))
    return scope


def main() -> None:
    started = time.perf_counter()
    server = start_postgres(DURABLE)
    if "--durable-append-only" in sys.argv:
        try:
            with tempfile.TemporaryDirectory(prefix="engines-bench-") as name:
                durable_append(server.create_database("bench_conversations"), Path(name))
        finally:
            server.stop()
        return
    engines: list[PostgresEngine] = []
    try:
        with tempfile.TemporaryDirectory(prefix="engines-bench-") as name:
            folder = Path(name)
            if "--skip-conversations" not in sys.argv:
                url = server.create_database("bench_conversations")
                durable_append(url, folder)
                conversation_costs.run(url, folder, report)
                (folder / "search").mkdir()
                cross_chat_search(server.create_database("bench_search"), folder / "search")
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
