"""A person's first directory open on an empty PostgreSQL schema (format: bench/README.md).

    .venv/bin/python bench/pg_first_open_bench.py [--rounds 20]

What a first start of a node (and every PostgreSQL test) pays before anything else: the
engine's bookkeeping tables, then ``Chats(root, person)``, whose stores run their migrations.
Starts its own PostgreSQL (tests/support/postgres_server.py) and times, side by side in this
process, in alternating blocks on fresh schemas:

* the baseline: migrations applied one statement per round trip, a savepoint per migration
  (the algorithm ``PostgresScope.migrate`` had before backend/storage/postgres/migrations.py,
  kept below as the reference);
* the measured: ``PostgresScope.migrate`` as it is.

Printed per open: wall time, this process's CPU, the server's CPU (its processes' own and
their reaped backends', from /proc) and round trips (see :class:`RoundTrips`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg._connection_base import BaseConnection
from psycopg._cursor_base import BaseCursor
from psycopg._pipeline_base import BasePipeline

from backend.chats import Chats
from backend.clock import now_ms
from backend.storage.postgres import PostgresScope
from tests.support.postgres_server import PostgresServer, start_postgres

Migrate = Callable[[PostgresScope, str, Sequence[Callable[[Any], None]]], list[str]]


def one_statement_at_a_time(
    self: PostgresScope, component: str, migrations: Sequence[Callable[[Any], None]]
) -> list[str]:
    """The baseline: the earlier ``PostgresScope.migrate``, verbatim but for names."""
    from backend.storage.postgres.scope import _lock_key

    select = "SELECT name FROM _migrations WHERE component = ?"
    with self.lock:
        applied = {row[0] for row in self.query(select, (component,))}
        if all(migration.__name__ in applied for migration in migrations):
            return []
        ran: list[str] = []
        with self.transaction():
            self.query("SELECT pg_advisory_xact_lock(?)", (_lock_key(component),))
            applied = {row[0] for row in self.query(select, (component,))}
            for migration in migrations:
                if migration.__name__ in applied:
                    continue
                with self.transaction():
                    migration(self)
                    self.execute(
                        "INSERT INTO _migrations (component, name, applied_at) VALUES (?, ?, ?)",
                        (component, migration.__name__, now_ms()),
                    )
                ran.append(migration.__name__)
        return ran


class RoundTrips:
    """Round trips, counted where psycopg sends: a statement or command outside a pipeline
    is one, a pipeline's sync is one (statements queued in a pipeline are not); logins are
    counted apart. (psycopg's own ``wait`` runs once per statement sent, even in a pipeline.)
    """

    def __init__(self) -> None:
        self.count = 0
        self.logins = 0

    @contextmanager
    def counting(self) -> Iterator[None]:
        patched = [
            (BaseCursor, "_execute_send", self._outside_pipeline),
            (BaseConnection, "_exec_command", self._outside_pipeline),
            (BasePipeline, "_enqueue_sync", self._always),
        ]
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
        connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

        def login(cls: type[psycopg.Connection[Any]], *args: Any, **kwargs: Any) -> Any:
            self.logins += 1
            return connect(cls, *args, **kwargs)

        for (owner, name, wrap), (_, _, original) in zip(patched, originals, strict=True):
            setattr(owner, name, wrap(original))
        psycopg.Connection.connect = classmethod(login)  # type: ignore[assignment,method-assign]
        try:
            yield
        finally:
            for owner, name, original in originals:
                setattr(owner, name, original)
            psycopg.Connection.connect = classmethod(connect)  # type: ignore[assignment,method-assign]

    def _outside_pipeline(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(owner: Any, *args: Any, **kwargs: Any) -> Any:
            conn = getattr(owner, "_conn", owner)
            if conn._pipeline is None:
                self.count += 1
            return original(owner, *args, **kwargs)

        return counted

    def _always(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def counted(owner: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(owner, *args, **kwargs)

        return counted


def server_cpu_s(server: PostgresServer) -> float:
    """CPU seconds of the server's processes, with their reaped children's (the backends of
    closed connections)."""
    assert server.process is not None
    root = server.process.pid
    ticks = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry) == root or int(fields[1]) == root:
            ticks += sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def block(server: PostgresServer, migrate: Migrate, opens: int, trips: RoundTrips) -> tuple:
    """``opens`` first opens with ``migrate``; (wall, client CPU, server CPU, round trips)."""
    PostgresScope.migrate = migrate  # type: ignore[method-assign,assignment]
    wall = cpu = 0.0
    trips.count = trips.logins = 0
    time.sleep(0.3)  # the previous block's backends have exited and been reaped
    server_before = server_cpu_s(server)
    for _ in range(opens):
        with server.fresh_database() as url, tempfile.TemporaryDirectory() as root:
            os.environ["CHATS_STORAGE"] = url
            started, cpu_started = time.perf_counter(), time.process_time()
            with trips.counting():
                Chats(Path(root), "alice").close()
            wall += time.perf_counter() - started
            cpu += time.process_time() - cpu_started
    time.sleep(0.3)
    return wall, cpu, server_cpu_s(server) - server_before, trips.count, trips.logins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=5, help="opens per alternating block")
    args = parser.parse_args()
    measured: Migrate = PostgresScope.migrate
    trips = RoundTrips()
    server = start_postgres()
    totals = {"baseline": [0.0, 0.0, 0.0, 0, 0], "measured": [0.0, 0.0, 0.0, 0, 0]}
    try:
        block(server, measured, 2, trips)  # warm: imports, the test database, caches
        for _ in range(max(args.rounds // args.block, 1)):
            for name, migrate in (("baseline", one_statement_at_a_time), ("measured", measured)):
                for i, value in enumerate(block(server, migrate, args.block, trips)):
                    totals[name][i] += value
    finally:
        PostgresScope.migrate = measured  # type: ignore[method-assign]
        server.stop()
    opens = max(args.rounds // args.block, 1) * args.block
    base, new = totals["baseline"], totals["measured"]
    for i, (metric, unit, scale) in enumerate(
        (("wall", "ms", 1000), ("client cpu", "ms", 1000), ("server cpu", "ms", 1000))
    ):
        print(
            f"first directory open, {metric}: ratio={new[i] / base[i]:.2f} goal=<1 "
            f"({new[i] / opens * scale:.1f} {unit} vs {base[i] / opens * scale:.1f} {unit} "
            f"per open, {opens} opens each)",
            flush=True,
        )
    print(
        f"first directory open, round trips: ratio={new[3] / base[3]:.2f} goal=<1 "
        f"({new[3] / opens:.0f} vs {base[3] / opens:.0f} per open, "
        f"and {new[4] / opens:.0f} vs {base[4] / opens:.0f} logins)",
        flush=True,
    )


if __name__ == "__main__":
    main()
