"""What tokenizing in Python costs the PostgreSQL engine, against SQLite indexing the same text.

Run: ``.venv/bin/python bench/fts_tokens_bench.py`` (a few seconds, in-process, no server).
The PostgreSQL engine reads every message's tokens in Python (``backend.sessions.fts_tokens``,
FTS5's ``porter unicode61`` rules) and hands PostgreSQL a ``tsvector`` literal
(``backend.sessions.pg_fts.document_parts``); the SQLite engine lets FTS5 tokenize inside its
insert. The baseline, side by side: inserting the same messages into an in-memory FTS5 table
with the same tokenizer, one transaction (tokenizing plus FTS5's own index writes).

Messages are paragraphs of this repository's docs (English prose with code words), 2,000 of
them, and one 1 MB message. Each figure is the best of five runs.

1. ``tokens_vs_fts5_insert``: ratio = Python tokens / FTS5 insert (memo of read tokens warm);
2. ``tokens_cold_vs_fts5_insert``: the same with the tokenizer's memo of read tokens emptied
   before each run (a process's first messages);
3. ``tsvector_parts_vs_fts5_insert``: tokens plus the ``tsvector`` literals / FTS5 insert;
4. ``tsvector_parts_1mb_vs_fts5_insert``: the same for one 1 MB message.

No goal: this prints the cost the PostgreSQL engine pays on the application side per write.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.sessions.fts_tokens import MESSAGES  # noqa: E402
from backend.sessions.pg_fts import document_parts  # noqa: E402
from backend.sessions.search import FTS_TOKENIZER  # noqa: E402
from backend.storage import Database  # noqa: E402

MESSAGE_COUNT = 2_000
RUNS = 5


def corpus() -> list[str]:
    paragraphs: list[str] = []
    for path in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        paragraphs += [p.strip() for p in path.read_text().split("\n\n") if len(p.strip()) > 80]
    return [paragraphs[index % len(paragraphs)] for index in range(MESSAGE_COUNT)]


def fts5_insert(texts: list[str]) -> None:
    db = Database(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE docs USING fts5(body, tokenize = '{FTS_TOKENIZER}')")
        with db.transaction():
            db.executemany("INSERT INTO docs (body) VALUES (?)", [(text,) for text in texts])
    finally:
        db.close()


def best(run: Callable[[], object], before: Callable[[], object] = lambda: None) -> float:
    times = []
    for _ in range(RUNS):
        before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def report(name: str, measured: float, baseline: float, what: str) -> None:
    print(
        f"{name}: ratio={measured / baseline:.2f} goal=none "
        f"({what}: python {measured * 1000:.1f} ms, fts5 insert {baseline * 1000:.1f} ms)"
    )


def main() -> None:
    texts = corpus()
    size = sum(len(text) for text in texts)
    what = f"{len(texts)} messages, {size / 1024:.0f} KB"
    baseline = best(lambda: fts5_insert(texts))
    tokens = best(lambda: [MESSAGES.tokens(text) for text in texts])
    report("tokens_vs_fts5_insert", tokens, baseline, what)
    cold = best(lambda: [MESSAGES.tokens(text) for text in texts], MESSAGES.forget)
    report("tokens_cold_vs_fts5_insert", cold, baseline, what)
    parts = best(lambda: [document_parts(text) for text in texts])
    report("tsvector_parts_vs_fts5_insert", parts, baseline, what)
    big = " ".join(texts)[: 1024 * 1024]
    big_baseline = best(lambda: fts5_insert([big]))
    big_parts = best(lambda: document_parts(big))
    report("tsvector_parts_1mb_vs_fts5_insert", big_parts, big_baseline, "one 1 MB message")


if __name__ == "__main__":
    main()
