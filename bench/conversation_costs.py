"""The conversation cases of ``bench/storage_engines_bench.py``: what a conversation costs on
PostgreSQL, measured through ``Sessions`` itself (``CHATS_STORAGE`` set to the bench's server).

1. ``wal_per_streamed_reply``: a 3,000-word reply streamed with a checkpoint every
   :data:`WORDS_PER_CHECKPOINT` words (2 s of a model writing 50 words a second, the runtime's
   default checkpoint interval) and a final write; WAL bytes (``pg_current_wal_lsn()`` before
   and after) over the reply's stored size. Rewriting the whole partial reply at each
   checkpoint grows with the square of the reply.
2. ``append_bytes_at_1000_vs_10``: WAL bytes per appended message in a chat of 1,000 messages
   over the same in a chat of 10: an append writes its own row, never the chat.
3. ``newest_20_at_100k_vs_1k``: ``history(newest_first=True)`` taking 20 messages of a
   100,000-message conversation over a 1,000-message one (``bench/sessions_bench.py``'s case,
   on PostgreSQL).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import Any

import psycopg

from backend.sessions import Session, Sessions

REPLY_WORDS = 3_000
WORDS_PER_CHECKPOINT = 100
APPENDS_MEASURED = 50
READ_ROUNDS = 7
READ_REPEATS = 20
_names = count()


@contextmanager
def on_postgresql(url: str) -> Iterator[None]:
    """``CHATS_STORAGE`` = ``url`` while the block runs."""
    before = os.environ.get("CHATS_STORAGE")
    os.environ["CHATS_STORAGE"] = url
    try:
        yield
    finally:
        if before is None:
            del os.environ["CHATS_STORAGE"]
        else:
            os.environ["CHATS_STORAGE"] = before


def wal_bytes(url: str, action: Callable[[], Any]) -> int:
    """WAL the server wrote while ``action`` ran."""
    with psycopg.connect(url, autocommit=True) as conn:
        before = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        action()
        row = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (before,))
        return int(row.fetchone()[0])  # type: ignore[index]


def reply(words: list[str], status: str) -> dict[str, Any]:
    return {
        "id": "reply",
        "role": "assistant",
        "parts": [{"type": "text", "text": " ".join(words)}],
        "metadata": {"status": status, "model": "bench-model"},
    }


def streamed_reply_wal(url: str, folder: Path) -> tuple[int, int]:
    """(WAL bytes of streaming the reply, the reply's stored bytes)."""
    words = [f"word{n % 997}" for n in range(REPLY_WORDS)]
    with on_postgresql(url), Sessions(folder / f"stream-{next(_names)}.sqlite") as store:
        session = store.session()
        session.append_message(
            {"id": "q", "role": "user", "parts": [{"type": "text", "text": "?"}]}
        )
        session.append_message(reply([], "running"))

        def stream() -> None:
            for end in range(WORDS_PER_CHECKPOINT, REPLY_WORDS + 1, WORDS_PER_CHECKPOINT):
                session.update_message(reply(words[:end], "running"))
            session.update_message(reply(words, "completed"))

        written = wal_bytes(url, stream)
        final = session.get_message("reply")
        assert final == reply(words, "completed")
    size = len(store_form(final))
    return written, size


def store_form(message: dict[str, Any]) -> bytes:
    from backend.sessions.encoding import encode_message

    return encode_message(message).content.encode()


def append_wal(url: str, folder: Path, chat_size: int) -> float:
    """WAL bytes per appended message in a chat already holding ``chat_size`` messages."""
    with on_postgresql(url), Sessions(folder / f"append-{next(_names)}.sqlite") as store:
        session = store.session()
        with store.database.transaction():
            for n in range(chat_size):
                session.append_message(text(f"seed{n}"))
        appended = count()

        def append() -> None:
            for _ in range(APPENDS_MEASURED):
                session.append_message(text(f"new{next(appended)}"))

        return wal_bytes(url, append) / APPENDS_MEASURED


def text(message_id: str) -> dict[str, Any]:
    words = " ".join(f"w{n}" for n in range(60))
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": words}]}


def newest_20_us(sessions: list[tuple[str, Session]]) -> dict[str, float]:
    """Median µs of taking the newest 20 messages of each session (interleaved rounds)."""
    from bench.sessions_bench import newest

    timings: dict[str, list[float]] = {name: [] for name, _ in sessions}
    for round_index in range(READ_ROUNDS):
        order = sessions if round_index % 2 == 0 else list(reversed(sessions))
        for name, session in order:
            start = time.perf_counter()
            for _ in range(READ_REPEATS):
                newest(session)
            timings[name].append((time.perf_counter() - start) / READ_REPEATS)
    return {name: statistics.median(samples) * 1e6 for name, samples in timings.items()}


def recent_reads(url: str, folder: Path) -> tuple[float, float, float]:
    """(µs at 100k, µs at 1k, seconds to build the 100k conversation) on PostgreSQL."""
    from bench.sessions_bench import LARGE_CONVERSATION, SMALL_CONVERSATION, build_conversation

    with on_postgresql(url):
        started = time.perf_counter()
        large = build_conversation(folder / "large.sqlite", LARGE_CONVERSATION)
        build_s = time.perf_counter() - started
        small = build_conversation(folder / "small.sqlite", SMALL_CONVERSATION)
        result = newest_20_us([("large", large), ("small", small)])
    return result["large"], result["small"], build_s


def run(url: str, folder: Path, report: Callable[[str, float, str, str], None]) -> None:
    """Print the three conversation cases (see the module docstring)."""
    written, size = streamed_reply_wal(url, folder)
    report(
        "wal_per_streamed_reply",
        written / size,
        "<=3",
        f"{REPLY_WORDS:,} words, a checkpoint every {WORDS_PER_CHECKPOINT} words: "
        f"{written:,} WAL bytes for a {size:,}-byte reply",
    )
    large, small = append_wal(url, folder, 1_000), append_wal(url, folder, 10)
    report(
        "append_bytes_at_1000_vs_10",
        large / small,
        "<=1.2",
        f"WAL bytes per appended message: {large:.0f} in a chat of 1,000, {small:.0f} in one "
        f"of 10 (mean of {APPENDS_MEASURED} appends)",
    )
    large_us, small_us, build_s = recent_reads(url, folder)
    report(
        "newest_20_at_100k_vs_1k_postgresql",
        large_us / small_us,
        "<=1.5",
        f"history(newest_first=True) taking 20: {large_us:.0f} us at 100,000 messages, "
        f"{small_us:.0f} us at 1,000; 100k conversation built in {build_s:.0f} s",
    )
