"""Cross-chat message search on PostgreSQL (tsvector parts from FTS5's tokens) vs SQLite FTS5.

Run: ``.venv/bin/python bench/search_engines_bench.py [--chats 500] [--messages 200]
[--url postgresql://...]`` (without ``--url`` it starts a throwaway server the way the tests
do, ``tests/support/postgres_server.py``). Both engines hold the same messages (paragraphs of
this repository's docs, each chat a rotation of them), indexed as the project indexes them:
SQLite an FTS5 table with ``porter unicode61``; PostgreSQL ``backend.sessions.pg_fts``
documents in a table with a GIN index. Then the same phrase queries (rare, medium and common
words, two-word phrases) run on both, best rank first, 20 hits, each query 20 times:

``search_p95_pg_vs_sqlite``: ratio = PostgreSQL p95 / SQLite p95 over all queries;
goal <= 3 (issue 26). Per-query-kind p50s are printed beside it.

``directory_search_p95_pg_vs_sqlite``: the same messages as a person's directory, written and
searched through the stores the app runs (``backend.chats.index_store.MessageIndexStore`` on a
``directory.sqlite`` file, its twin ``PgMessageIndexStore`` on a PostgreSQL scope): each chat's
messages in one ``apply``, then each query as ``Chats.search_messages`` runs it (live chats
only, best 20 with their snippets). ``--directory-chats`` sets how many of the chats go in
(default: all); the ratio is PostgreSQL p95 / SQLite p95 over all queries, goal <= 3.

``directory_search_p95_beside_others_vs_alone`` (with ``--neighbours N``): the same searches
of the same PostgreSQL directory once another person's directory, N times as big, shares its
tables: p95 beside / p95 alone, goal <= 1.5 (a person's search costs what their own
directory holds).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from backend.chats.directory_storage import twin_of  # noqa: E402
from backend.chats.index_store import MessageIndexStore  # noqa: E402
from backend.config import PostgresLocation, parse_storage  # noqa: E402
from backend.sessions.pg_fts import RANK_EXPRESSION, document_parts, phrase_tsquery  # noqa: E402
from backend.sessions.search import FTS_TOKENIZER, phrase_query  # noqa: E402
from backend.storage import Database, Scope  # noqa: E402
from backend.storage.engines import PostgresStorage  # noqa: E402
from tests.chats.directory_chats import DirectoryChats  # noqa: E402
from tests.support.postgres_server import start_postgres  # noqa: E402

QUERIES = {
    "rare word": ["haystack", "patroni", "quetzal"],
    "medium word": ["sidebar", "websocket", "migration"],
    "common word": ["the", "chat", "test"],
    "phrase": ["the chat", "a message", "search index"],
}
RUNS = 20
LIMIT = 20
_RANK = RANK_EXPRESSION.format(document="tsv", query="%(q)s::tsquery")
PG_SEARCH = (
    f"SELECT doc, -max({_RANK}) AS rank FROM message_parts WHERE tsv @@ %(q)s::tsquery "
    "GROUP BY doc ORDER BY rank, doc LIMIT %(limit)s"
)
SQLITE_SEARCH = (
    "SELECT rowid, rank FROM message_fts WHERE message_fts MATCH ? ORDER BY rank LIMIT ?"
)


def paragraphs() -> list[str]:
    found: list[str] = []
    for path in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        found += [p.strip() for p in path.read_text().split("\n\n") if len(p.strip()) > 40]
    return found


def messages(chats: int, per_chat: int) -> list[str]:
    texts = paragraphs()
    return [
        texts[(chat * 7 + index) % len(texts)] for chat in range(chats) for index in range(per_chat)
    ]


def load_sqlite(texts: list[str]) -> Database:
    db = Database(":memory:")
    db.execute(
        f"CREATE VIRTUAL TABLE message_fts USING fts5(content, tokenize = '{FTS_TOKENIZER}')"
    )
    with db.transaction():
        db.executemany(
            "INSERT INTO message_fts (rowid, content) VALUES (?, ?)", list(enumerate(texts))
        )
    return db


def load_pg(url: str, texts: list[str]) -> psycopg.Connection:
    conn = psycopg.connect(url, autocommit=True)
    conn.execute("DROP TABLE IF EXISTS message_parts")
    conn.execute("CREATE TABLE message_parts (doc int NOT NULL, part int NOT NULL, tsv tsvector)")
    with conn.cursor().copy("COPY message_parts (doc, part, tsv) FROM STDIN") as copy:
        for doc, text in enumerate(texts):
            for number, part in enumerate(document_parts(text)):
                copy.write_row((doc, number, part.tsvector))
    conn.execute("CREATE INDEX message_parts_tsv ON message_parts USING gin (tsv)")
    conn.execute("VACUUM ANALYZE message_parts")
    return conn


def timed(run: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    run(*args)
    return time.perf_counter() - start


def _pg_hits(pg: psycopg.Connection, tsquery: str | None) -> list[object]:
    return pg.execute(PG_SEARCH, {"q": tsquery, "limit": LIMIT}).fetchall()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def load_directory(db: Scope, chats: list[list[str]]) -> MessageIndexStore:
    """A directory holding ``chats`` (live), indexed through its message index store."""
    rows = DirectoryChats(db)
    store = twin_of(MessageIndexStore, db)(db)
    for num, texts in enumerate(chats, start=1):
        with db.transaction():
            rows.add(num, f"chat-{num:05d}")
            store.apply(num, {f"m{index:04d}": text for index, text in enumerate(texts)})
    return store


def timed_searches(stores: dict[str, MessageIndexStore]) -> dict[str, list[float]]:
    """Each query :data:`RUNS` times on each store, in turn; per-kind p50s printed."""
    times: dict[str, list[float]] = {name: [] for name in stores}
    for kind, queries in QUERIES.items():
        kind_times: dict[str, list[float]] = {name: [] for name in stores}
        for query in queries:
            match = phrase_query(query)
            assert match is not None
            assert len({len(store.search(match, LIMIT)) for store in stores.values()}) == 1, query
            for _ in range(RUNS):
                for name, store in stores.items():
                    kind_times[name].append(timed(store.search, match, LIMIT))
        p50s = ", ".join(
            f"{name} {statistics.median(found) * 1000:.2f} ms" for name, found in kind_times.items()
        )
        print(f"  {kind}: p50 {p50s}")
        for name, found in kind_times.items():
            times[name] += found
    return times


def directory_case(url: str, folder: Path, chats: list[list[str]], neighbours: int) -> None:
    """``directory_search_p95_pg_vs_sqlite`` and, with ``neighbours``,
    ``directory_search_p95_beside_others_vs_alone`` (see the module docstring)."""
    location = parse_storage(url)
    assert isinstance(location, PostgresLocation)
    storage = PostgresStorage(location)
    sqlite_db = Database(folder / "directory.sqlite")
    pg_db = storage.open_scope(str(folder / "pg" / "directory.sqlite"))
    other_db = storage.open_scope(str(folder / "pg-other" / "directory.sqlite"))
    try:
        start = time.perf_counter()
        sqlite = load_directory(sqlite_db, chats)
        sqlite_load = time.perf_counter() - start
        start = time.perf_counter()
        pg = load_directory(pg_db, chats)
        pg_db.execute("ANALYZE")
        pg_load = time.perf_counter() - start
        count = sum(len(texts) for texts in chats)
        print(
            f"directory of {len(chats)} chats, {count} messages: "
            f"written in sqlite {sqlite_load:.1f} s, pg {pg_load:.1f} s"
        )
        alone = timed_searches({"sqlite": sqlite, "postgresql": pg})
        ratio = p95(alone["postgresql"]) / p95(alone["sqlite"])
        print(
            f"directory_search_p95_pg_vs_sqlite: ratio={ratio:.2f} goal=<=3 ({count} messages, "
            f"p95 pg {p95(alone['postgresql']) * 1000:.2f} ms, "
            f"sqlite {p95(alone['sqlite']) * 1000:.2f} ms)"
        )
        if neighbours:
            load_directory(other_db, chats * neighbours)
            pg_db.execute("ANALYZE")
            print(f"another person's directory of {count * neighbours} messages beside it")
            beside = timed_searches({"postgresql": pg})["postgresql"]
            ratio = p95(beside) / p95(alone["postgresql"])
            print(
                f"directory_search_p95_beside_others_vs_alone: ratio={ratio:.2f} goal=<=1.5 "
                f"(p95 {p95(beside) * 1000:.2f} ms vs {p95(alone['postgresql']) * 1000:.2f} ms)"
            )
    finally:
        sqlite_db.close()
        pg_db.close()
        other_db.close()
        storage.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chats", type=int, default=500)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--directory-chats", type=int, help="chats in the directory case")
    parser.add_argument(
        "--neighbours", type=int, default=0, help="another directory N times as big beside it"
    )
    parser.add_argument("--url")
    args = parser.parse_args()
    server = None if args.url else start_postgres()
    try:
        with server.fresh_database() if server else _given(args.url) as url:
            texts = messages(args.chats, args.messages)
            start = time.perf_counter()
            sqlite = load_sqlite(texts)
            sqlite_load = time.perf_counter() - start
            start = time.perf_counter()
            pg = load_pg(url, texts)
            pg_load = time.perf_counter() - start
            print(f"loaded {len(texts)} messages: sqlite {sqlite_load:.1f} s, pg {pg_load:.1f} s")
            all_pg: list[float] = []
            all_sqlite: list[float] = []
            for kind, queries in QUERIES.items():
                kind_pg: list[float] = []
                kind_sqlite: list[float] = []
                for query in queries:
                    match, tsquery = phrase_query(query), phrase_tsquery(query)
                    pg_hits = _pg_hits(pg, tsquery)
                    sqlite_hits = sqlite.query(SQLITE_SEARCH, (match, LIMIT))
                    assert len(pg_hits) == len(sqlite_hits), query
                    for _ in range(RUNS):
                        kind_sqlite.append(timed(sqlite.query, SQLITE_SEARCH, (match, LIMIT)))
                        kind_pg.append(timed(_pg_hits, pg, tsquery))
                print(
                    f"  {kind}: p50 sqlite {statistics.median(kind_sqlite) * 1000:.2f} ms, "
                    f"postgresql {statistics.median(kind_pg) * 1000:.2f} ms"
                )
                all_pg += kind_pg
                all_sqlite += kind_sqlite
            ratio = p95(all_pg) / p95(all_sqlite)
            print(
                f"search_p95_pg_vs_sqlite: ratio={ratio:.2f} goal=<=3 ({len(texts)} messages, "
                f"p95 pg {p95(all_pg) * 1000:.2f} ms, sqlite {p95(all_sqlite) * 1000:.2f} ms)"
            )
            pg.close()
            sqlite.close()
            per_chat = [
                texts[chat * args.messages : (chat + 1) * args.messages]
                for chat in range(args.directory_chats or args.chats)
            ]
            with tempfile.TemporaryDirectory() as folder:
                directory_case(url, Path(folder), per_chat, args.neighbours)
    finally:
        if server:
            server.stop()


class _given:
    """A URL someone else's server serves, as a context like ``fresh_database``."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    main()
