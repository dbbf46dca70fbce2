"""How long a search-box query waits for the model while the background worker catches up.

One model runs per process (``BundledEmbedder`` takes one native call at a time), so a query
embedded while the worker embeds a batch waits for that batch. This prints the time to
embed a query (the process's one model, as ``MeaningSearch.meaning_hits`` does) for queries
sent while a worker catches up, with the worker's batch at the CLI's size (``BATCH``) and
at the worker's (``WORKER_BATCH``), side by side in one process, and their ratio.

Run: ``python bench/meaning_query_wait_bench.py [--messages 160] [--queries 8]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from backend.chats import Chats
from backend.chats import meaning_search as meaning_module
from backend.chats.meaning_search import MeaningSearch
from backend.meaning import BundledEmbedder

TOPICS = [
    "planning a hiking trip in the mountains with friends next summer",
    "how to bake sourdough bread with a rye starter at home",
    "my laptop battery drains quickly after the last update",
    "learning to play the violin as an adult beginner",
    "the best way to repot a large fiddle leaf fig plant",
    "budgeting for a wedding with two hundred guests",
    "training a puppy to walk on a leash without pulling",
    "fixing a leaking kitchen tap with worn washers",
]
QUERIES = ["walking in the hills", "making bread", "computer power problems", "string lessons"]


def fill(root: Path, messages: int) -> Chats:
    chats = Chats(root, "bench")
    for number in range(messages):
        chat = chats.get_chat(chats.create_chat(f"chat {number}").id)
        text = f"{TOPICS[number % len(TOPICS)]} (note {number})"
        chat.session.append_message(
            {"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}
        )
    chats.flush_index()
    return chats


def waits(root: Path, embedder: BundledEmbedder, batch: int, messages: int, queries: int):
    meaning_module.WORKER_BATCH = batch
    chats = fill(root, messages)
    meaning = MeaningSearch(chats, embedder)
    meaning.start()
    try:
        seconds = []
        for number in range(queries):
            time.sleep(0.3)  # the worker is mid-batch
            started = time.perf_counter()
            embedder.embed_query(QUERIES[number % len(QUERIES)])
            seconds.append(time.perf_counter() - started)
        return seconds
    finally:
        meaning.stop()
        chats.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=160)
    parser.add_argument("--queries", type=int, default=8)
    args = parser.parse_args()
    embedder = BundledEmbedder()
    embedder.embed_query("warm up")  # the model's load is not a query's wait
    with tempfile.TemporaryDirectory() as folder:
        results = {}
        for batch in (meaning_module.BATCH, meaning_module.WORKER_BATCH):
            root = Path(folder) / f"batch-{batch}"
            results[batch] = waits(root, embedder, batch, args.messages, args.queries)
            found = results[batch]
            print(
                f"worker batch {batch:>2}: query median {statistics.median(found) * 1000:.0f} ms,"
                f" worst {max(found) * 1000:.0f} ms ({len(found)} queries while catching up)"
            )
        big, small = (statistics.median(results[b]) for b in results)
        print(f"median wait, batch {meaning_module.BATCH} / batch 4: {big / small:.1f}x")


if __name__ == "__main__":
    main()
