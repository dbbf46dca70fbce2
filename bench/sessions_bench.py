"""Benchmarks of backend.sessions, one line per metric (format: bench/README.md).

    .venv/bin/python bench/sessions_bench.py

Every ratio compares two things measured side by side in this process, interleaved in rounds
so that machine noise (and SQLite's periodic WAL checkpoints) hits both sides alike:

1. durable append of a small text message, one transaction each, against a raw ``sqlite3``
   insert of the same JSON into a one-table baseline with the same pragmas, under both
   durability levels (``CHATS_SQLITE_SYNCHRONOUS``: ``normal`` and ``full``), and what
   ``full`` costs against ``normal``;
2. the same workload against ``openai-agents`` ``SQLiteSession.add_items`` and
   ``langchain-community`` ``SQLChatMessageHistory.add_message`` (``pip install -e '.[bench]'``);
3. reading the newest 20 messages of a 100,000-message conversation against a 1,000-message one;
4. peak Python memory above baseline while streaming a 200 MB history through ``history()``;
5. an FTS search over 100,000 messages against a LIKE scan of the same rows.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from itertools import count, islice
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.sessions import Session, Sessions
from backend.storage.durability import SYNCHRONOUS_PRAGMAS, set_default_synchronous

APPEND_ROUNDS = 60
APPEND_ROUNDS_FULL = 20  # an fsync per commit: fewer rounds keep the run short
APPEND_BLOCK = 100
COMPETITOR_APPENDS = 400
READ_ROUNDS = 40
READ_REPEATS = 10
LARGE_CONVERSATION = 100_000
SMALL_CONVERSATION = 1_000
STREAM_MESSAGES = 2_000
STREAM_MESSAGE_BYTES = 100_000
RARE_WORD = "zebracorn"
RARE_EVERY = 500


def report(metric: str, ratio: float, goal: str, details: str) -> None:
    print(f"{metric}: ratio={ratio:.2f} goal={goal} ({details})", flush=True)


def skipped(metric: str, goal: str, reason: str) -> None:
    print(f"{metric}: skipped: {reason} goal={goal}", flush=True)


def small_messages() -> Callable[[], dict[str, Any]]:
    ids = count()

    def make() -> dict[str, Any]:
        n = next(ids)
        return {
            "id": f"msg-{n:08d}",
            "role": "user" if n % 2 else "assistant",
            "parts": [{"type": "text", "text": f"message number {n}: a short chat turn of text"}],
        }

    return make


# ── 1. durable append vs raw sqlite3 ────────────────────────────────────

BASELINE_DDL = (
    "CREATE TABLE messages (id TEXT PRIMARY KEY, parent_id TEXT, content TEXT NOT NULL,"
    " created_at INTEGER NOT NULL) WITHOUT ROWID"
)
BASELINE_INSERT = "INSERT INTO messages (id, parent_id, content, created_at) VALUES (?, ?, ?, ?)"


def raw_connection(path: Path, synchronous: str = "normal") -> sqlite3.Connection:
    """The baseline: a bare connection with the store's pragmas."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in (
        "journal_mode = WAL",
        f"synchronous = {SYNCHRONOUS_PRAGMAS[synchronous]}",
        "busy_timeout = 10000",
        "foreign_keys = OFF",
    ):
        connection.execute(f"PRAGMA {pragma}")
    connection.execute(BASELINE_DDL)
    return connection


def bench_append(tmp: Path, synchronous: str = "normal", rounds: int = APPEND_ROUNDS) -> float:
    """Returns our microseconds per append (for the competitor comparison)."""
    previous = set_default_synchronous(synchronous)
    try:
        store = Sessions(tmp / f"append-{synchronous}.sqlite")
    finally:
        set_default_synchronous(previous)
    session = store.session()
    raw = raw_connection(tmp / f"baseline-{synchronous}.sqlite", synchronous)
    make = small_messages()
    previous = [None]

    def raw_append(message: dict[str, Any]) -> None:
        raw.execute("BEGIN IMMEDIATE")
        raw.execute(
            BASELINE_INSERT,
            (message["id"], previous[0], json.dumps(message), time.time_ns() // 1_000_000),
        )
        raw.execute("COMMIT")
        previous[0] = message["id"]

    session.append_message(make())  # the tail is read once per handle lifetime
    raw_append(make())
    ours_times: list[float] = []
    raw_times: list[float] = []
    cpu = {"ours": 0.0, "raw": 0.0}
    gc.disable()
    try:
        for round_index in range(rounds):
            sides = [
                ("ours", session.append_message, ours_times),
                ("raw", raw_append, raw_times),
            ]
            if round_index % 2:
                sides.reverse()
            for name, append, times in sides:
                block = [make() for _ in range(APPEND_BLOCK)]
                start, start_cpu = time.perf_counter(), time.process_time()
                for message in block:
                    append(message)
                times.append(time.perf_counter() - start)
                cpu[name] += time.process_time() - start_cpu
    finally:
        gc.enable()
    ratio = statistics.median(o / r for o, r in zip(ours_times, raw_times, strict=True))
    total = rounds * APPEND_BLOCK
    ours_us = sum(ours_times) / total * 1e6
    raw_us = sum(raw_times) / total * 1e6
    written = session._db.query_one("SELECT count(*) AS n FROM session_messages")["n"]
    report(
        "durable_append_vs_raw_sqlite"
        if synchronous == "normal"
        else f"durable_append_{synchronous}_vs_raw_sqlite",
        ratio,
        "<=1.5",
        f"median of {rounds} interleaved rounds of {APPEND_BLOCK}; ours {ours_us:.1f} us"
        f"/append, raw sqlite3 {raw_us:.1f} us/append (BEGIN IMMEDIATE, INSERT id/parent/json/"
        f"time, COMMIT; WAL, synchronous={SYNCHRONOUS_PRAGMAS[synchronous]}); mean ratio "
        f"{ours_us / raw_us:.2f}; "
        f"CPU-time ratio {cpu['ours'] / cpu['raw']:.2f}; load average {os.getloadavg()[0]:.1f}"
        f" on {os.cpu_count()} cpus; {written} rows",
    )
    store.close()
    raw.close()
    return ours_us


# ── 2. competitors ──────────────────────────────────────────────────────


def bench_competitors(tmp: Path, ours_sync_us: float) -> None:
    make = small_messages()
    ours = Sessions(tmp / "ours-async.sqlite").session()

    async def ours_via_threads() -> float:
        messages = [make() for _ in range(COMPETITOR_APPENDS)]
        start = time.perf_counter()
        for message in messages:
            await asyncio.to_thread(ours.append_message, message)
        return (time.perf_counter() - start) / COMPETITOR_APPENDS * 1e6

    ours_async_us = asyncio.run(ours_via_threads())
    ours_note = f"ours {ours_sync_us:.1f} us sync, {ours_async_us:.1f} us via asyncio.to_thread"

    try:
        from agents import SQLiteSession
    except Exception as exc:  # an optional extra: say why, do not fail the run
        skipped("append_vs_openai_agents", ">=2", f"openai-agents import failed: {exc!r}")
    else:
        agents_session = SQLiteSession("bench", tmp / "openai-agents.sqlite")

        async def agents_appends() -> float:
            items = [
                {"role": "user", "content": make()["parts"][0]["text"]}
                for _ in range(COMPETITOR_APPENDS)
            ]
            await agents_session.add_items([items[0]])
            start = time.perf_counter()
            for item in items:
                await agents_session.add_items([item])
            return (time.perf_counter() - start) / COMPETITOR_APPENDS * 1e6

        agents_us = asyncio.run(agents_appends())
        agents_session.close()
        report(
            "append_vs_openai_agents",
            agents_us / ours_async_us,
            ">=2",
            f"openai-agents SQLiteSession.add_items {agents_us:.1f} us/item (async, its own "
            f"thread hop and pragmas); {ours_note}; ratio = theirs / ours via to_thread "
            f"(vs ours sync: {agents_us / ours_sync_us:.1f}x); {COMPETITOR_APPENDS} appends",
        )

    try:
        from langchain_community.chat_message_histories import SQLChatMessageHistory
        from langchain_core.messages import HumanMessage
    except Exception as exc:
        skipped("append_vs_langchain", ">=2", f"langchain-community import failed: {exc!r}")
    else:
        history = SQLChatMessageHistory(
            session_id="bench", connection=f"sqlite:///{tmp / 'langchain.sqlite'}"
        )
        texts = [make()["parts"][0]["text"] for _ in range(COMPETITOR_APPENDS)]
        history.add_message(HumanMessage(content="warm up"))
        start = time.perf_counter()
        for text in texts:
            history.add_message(HumanMessage(content=text))
        langchain_us = (time.perf_counter() - start) / COMPETITOR_APPENDS * 1e6
        report(
            "append_vs_langchain",
            langchain_us / ours_sync_us,
            ">=2",
            f"langchain-community SQLChatMessageHistory.add_message {langchain_us:.1f} us/msg "
            f"(sync, SQLAlchemy, its default pragmas); {ours_note}; ratio = theirs / ours sync; "
            f"{COMPETITOR_APPENDS} appends",
        )


# ── 3. newest 20 at 100,000 vs 1,000 messages ───────────────────────────

WORDS = [
    "".join(random.Random(seed).choice("bcdfghjklmnprstvwz") + v for v in ("a", "e", "io"))
    for seed in range(4_000)
]


def chat_text(rng: random.Random, n: int) -> str:
    words = rng.choices(WORDS, k=rng.randint(12, 30))
    if n % RARE_EVERY == 7:
        words.insert(len(words) // 2, RARE_WORD)
    return " ".join(words)


def build_conversation(path: Path, size: int) -> Session:
    """A linear conversation written in bulk (import in large transactions)."""
    store = Sessions(path)
    session = store.session()
    rng = random.Random(size)
    parent = None
    for start in range(0, size, 5_000):
        with store.database.transaction():
            for n in range(start, min(size, start + 5_000)):
                message_id = f"m{n:07d}"
                session.import_message(
                    {
                        "id": message_id,
                        "role": "user" if n % 2 else "assistant",
                        "parts": [{"type": "text", "text": chat_text(rng, n)}],
                    },
                    parent_id=parent,
                    created_at=1_700_000_000_000 + n,
                )
                parent = message_id
    return session


def newest(session: Session, limit: int = 20) -> list[dict[str, Any]]:
    return list(islice(session.history(newest_first=True), limit))


def bench_recent_reads(tmp: Path) -> Session:
    started = time.perf_counter()
    large = build_conversation(tmp / "large.sqlite", LARGE_CONVERSATION)
    build_s = time.perf_counter() - started
    small = build_conversation(tmp / "small.sqlite", SMALL_CONVERSATION)
    assert [m["id"] for m in newest(large, 2)] == ["m0099999", "m0099998"]
    timings: dict[str, list[float]] = {"large": [], "small": []}
    for round_index in range(READ_ROUNDS):
        order = [("large", large), ("small", small)]
        if round_index % 2:
            order.reverse()
        for name, session in order:
            start = time.perf_counter()
            for _ in range(READ_REPEATS):
                newest(session)
            timings[name].append((time.perf_counter() - start) / READ_REPEATS)
    large_us = statistics.median(timings["large"]) * 1e6
    small_us = statistics.median(timings["small"]) * 1e6
    report(
        "newest_20_at_100k_vs_1k",
        large_us / small_us,
        "<=1.5",
        f"history(newest_first=True) taking 20 messages: {large_us:.0f} us at "
        f"{LARGE_CONVERSATION:,} messages, {small_us:.0f} us at {SMALL_CONVERSATION:,}; "
        f"medians of {READ_ROUNDS} rounds; warm handles; 100k file built in {build_s:.1f} s",
    )
    return large


# ── 4. memory while streaming 200 MB ───────────────────────────────────


def bench_stream_memory(tmp: Path) -> None:
    store = Sessions(tmp / "stream.sqlite")
    session = store.session()
    rng = random.Random(4)
    body = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz ", k=STREAM_MESSAGE_BYTES - 40))
    for start in range(0, STREAM_MESSAGES, 100):
        with store.database.transaction():
            for n in range(start, start + 100):
                session.append_message(
                    {
                        "id": f"big-{n}",
                        "role": "user",
                        "parts": [{"type": "text", "text": f"{n} {body}"}],
                    }
                )
    stored_mb = sum(s.bytes for s in session.get_history_row_stats()) / 1e6
    gc.collect()
    tracemalloc.start()
    baseline, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    streamed = 0
    started = time.perf_counter()
    for message in session.history():
        streamed += len(message["parts"][0]["text"])
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak_mb = (peak - baseline) / (1024 * 1024)
    report(
        "stream_200mb_peak_memory_mb",
        peak_mb,
        "<=16",
        f"peak traced Python memory above baseline {peak_mb:.1f} MiB while history() streamed "
        f"{STREAM_MESSAGES:,} messages ({stored_mb:.0f} MB stored, {streamed / 1e6:.0f} MB of "
        f"text) in {elapsed:.1f} s under tracemalloc; content windows of <=50 rows / 4 MiB",
    )
    store.close()


# ── 5. FTS vs LIKE over 100,000 messages ───────────────────────────────

LIKE_SCAN = (
    "SELECT id, content FROM session_messages WHERE session_id = ? AND content LIKE ? ESCAPE '\\'"
)


def bench_search(session: Session) -> None:
    started = time.perf_counter()
    hits = session.search(RARE_WORD)
    index_s = time.perf_counter() - started
    assert len(hits) == 20, len(hits)
    fts_times: list[float] = []
    like_times: list[float] = []
    like_rows = 0
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            session.search(RARE_WORD)
        fts_times.append((time.perf_counter() - start) / 20)
        start = time.perf_counter()
        like_rows = len(session._db.query(LIKE_SCAN, (session.id, f"%{RARE_WORD}%")))
        like_times.append(time.perf_counter() - start)
    fts_ms = statistics.median(fts_times) * 1e3
    like_ms = statistics.median(like_times) * 1e3
    report(
        "fts_search_vs_like_scan_100k",
        like_ms / fts_ms,
        ">=20",
        f"search('{RARE_WORD}', limit=20) {fts_ms:.2f} ms vs LIKE '%{RARE_WORD}%' scan "
        f"{like_ms:.1f} ms ({like_rows} matching rows of {LARGE_CONVERSATION:,}); "
        f"one-time index build with backfill {index_s:.1f} s",
    )


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sessions-bench-") as name:
        tmp = Path(name)
        ours_us = bench_append(tmp)
        full_us = bench_append(tmp, "full", APPEND_ROUNDS_FULL)
        report(
            "durable_append_full_vs_normal",
            full_us / ours_us,
            "reported",
            f"what CHATS_SQLITE_SYNCHRONOUS=full costs per append: {full_us:.1f} us against "
            f"{ours_us:.1f} us with normal (an fsync of the WAL at every commit)",
        )
        bench_competitors(tmp, ours_us)
        large = bench_recent_reads(tmp)
        bench_search(large)
        bench_stream_memory(tmp)
    print(
        f"# total {time.perf_counter() - started:.0f} s, python {sys.version.split()[0]}, "
        f"sqlite {sqlite3.sqlite_version}, {os.cpu_count()} cpus",
        flush=True,
    )


if __name__ == "__main__":
    main()
