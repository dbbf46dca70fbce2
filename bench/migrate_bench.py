"""``chats migrate`` both ways on a populated data folder (format: bench/README.md).

    .venv/bin/python bench/migrate_bench.py [--people 20] [--chats 50] [--messages 100]

Fills a data folder through the app's own stores (each person a directory of chats, each chat
a conversation of user/assistant messages), starts its own PostgreSQL (durable: fsync on,
tests/support/postgres_server.py), then times, side by side in this process:

* the baseline: ``chats backup`` of the folder (SQLite's online backup of every database);
* the folder migrated to PostgreSQL, then PostgreSQL migrated back to an empty folder.

The ratios say what a move between engines costs against copying the same files.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.chats import Chats
from backend.config import PostgresLocation, parse_storage
from backend.portability import backup_data_dir
from backend.portability.migrate import MigrationReport, migrate
from backend.portability.migrate_sides import PostgresSide, SqliteSide
from tests.support.postgres_server import start_postgres

ROOT = Path("/chats")
DURABLE = {"fsync": "on", "full_page_writes": "on", "synchronous_commit": "on"}


def populate(data_dir: Path, people: int, chats: int, messages: int) -> None:
    for p in range(people):
        with Chats(data_dir, f"person-{p:03d}") as directory:
            for c in range(chats):
                chat = directory.create_chat(f"Chat {c} of person {p}")
                session = directory.get_chat(chat.id).session
                for m in range(messages):
                    role = "user" if m % 2 == 0 else "assistant"
                    text = f"message {m} of chat {c}: the river bends twice before the bridge"
                    session.append_message(
                        {"id": f"m{m}", "role": role, "parts": [{"type": "text", "text": text}]}
                    )


def timed_migration(source: object, target: object) -> tuple[MigrationReport, float]:
    started = time.perf_counter()
    report = migrate(source, target)  # type: ignore[arg-type]
    return report, time.perf_counter() - started


def report(metric: str, ratio: float, goal: str, details: str) -> None:
    print(f"{metric}: ratio={ratio:.2f} goal={goal} ({details})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=20)
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--messages", type=int, default=100)
    args = parser.parse_args()
    os.environ["CHATS_STORAGE"] = ""
    server = start_postgres(DURABLE)
    try:
        with tempfile.TemporaryDirectory() as tmp, server.fresh_database() as url:
            source = Path(tmp) / "source"
            started = time.perf_counter()
            populate(source, args.people, args.chats, args.messages)
            fill_s = time.perf_counter() - started
            print(
                f"folder: {args.people} people x {args.chats} chats x {args.messages} messages "
                f"written in {fill_s:.1f} s",
                flush=True,
            )
            started = time.perf_counter()
            backup_data_dir(source, Path(tmp) / "backup.zip")
            backup_s = time.perf_counter() - started
            location = parse_storage(url)
            assert isinstance(location, PostgresLocation)
            postgres = PostgresSide(location, ROOT)
            try:
                there, there_s = timed_migration(SqliteSide(source), postgres)
                back, back_s = timed_migration(postgres, SqliteSide(Path(tmp) / "back"))
            finally:
                postgres.close()
            assert there.messages == back.messages == args.people * args.chats * args.messages
            for name, run, seconds in (("to postgresql", there, there_s), ("back", back, back_s)):
                report(
                    f"migrate {name} vs backup",
                    seconds / backup_s,
                    "none (measured)",
                    f"{seconds:.1f} s vs {backup_s:.1f} s; {run.people} people, {run.chats} "
                    f"chats, {run.messages:,} messages, {run.bytes / 1e6:.1f} MB, "
                    f"{run.messages / seconds:,.0f} messages/s",
                )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
