"""A long conversation imported into a new PostgreSQL database (format: bench/README.md).

    .venv/bin/python bench/pg_fresh_tables_bench.py [--sizes 2000 8000] [--rounds 2]

What ``chats import`` of a long chat, or a first migration, pays on a database no ANALYZE has
seen yet. Starts its own PostgreSQL (tests/support/postgres_server.py) and times, side by side
in this process, alternating on fresh schemas, one chain of ``size`` messages imported in one
transaction:

* the baseline: the tables left as they are (the planner's guesses until autovacuum runs);
* the measured: as the store writes (backend/storage/postgres/statistics.py analyses the
  tables once the import has written ``ROWS_BEFORE_ANALYZE`` rows).

Printed per size: wall time per import and the ratio (goal: below 1, falling as chains grow,
since the baseline's cost grows with the square of the chain).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.sessions import Sessions
from backend.storage.postgres.statistics import FreshTableStatistics
from tests.support.postgres_server import PostgresServer, start_postgres


def import_chain(server: PostgresServer, size: int) -> float:
    """Seconds to import a ``size``-message chain in one transaction into a fresh schema."""
    with server.fresh_database() as url, tempfile.TemporaryDirectory() as root:
        os.environ["CHATS_STORAGE"] = url
        sessions = Sessions(Path(root) / "chat.sqlite")
        try:
            session = sessions.session()
            started = time.perf_counter()
            with session._db.transaction():
                parent = None
                for index in range(size):
                    message = {
                        "id": f"m{index}",
                        "role": "user" if index % 2 == 0 else "assistant",
                        "parts": [{"type": "text", "text": f"message {index} of the chain"}],
                    }
                    session.import_message(message, parent_id=parent, created_at=index)
                    parent = message["id"]
            return time.perf_counter() - started
        finally:
            sessions.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    measured = FreshTableStatistics.wrote
    server = start_postgres()
    try:
        import_chain(server, 300)  # warm: imports, the test database, caches
        for size in args.sizes:
            totals = {"baseline": 0.0, "measured": 0.0}
            for _ in range(args.rounds):
                for name in ("baseline", "measured"):
                    if name == "baseline":
                        FreshTableStatistics.wrote = lambda self, db: None  # type: ignore[method-assign]
                    else:
                        FreshTableStatistics.wrote = measured  # type: ignore[method-assign]
                    totals[name] += import_chain(server, size)
            base, new = totals["baseline"], totals["measured"]
            print(
                f"import of a {size}-message chain into a new database: "
                f"ratio={new / base:.2f} goal=<1 ({new / args.rounds * 1000:.0f} ms vs "
                f"{base / args.rounds * 1000:.0f} ms per import, {args.rounds} each)",
                flush=True,
            )
    finally:
        FreshTableStatistics.wrote = measured  # type: ignore[method-assign]
        server.stop()


if __name__ == "__main__":
    main()
