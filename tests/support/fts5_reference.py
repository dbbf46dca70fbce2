"""What SQLite's FTS5 itself reads from texts: the reference the Python tokenizer is held to."""

from __future__ import annotations

from collections.abc import Sequence

from backend.storage import Database


def fts5_tokens(spec: str, texts: Sequence[str]) -> list[list[str]]:
    """The token stream FTS5 (tokenizer ``spec``) stores for each of ``texts``, by position."""
    db = Database(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE docs USING fts5(body, tokenize = '{spec}')")
        db.execute("CREATE VIRTUAL TABLE terms USING fts5vocab(docs, instance)")
        db.executemany(
            "INSERT INTO docs (rowid, body) VALUES (?, ?)",
            [(index, text) for index, text in enumerate(texts)],
        )
        streams: list[list[str]] = [[] for _ in texts]
        for term, doc, _offset in db.query(
            "SELECT term, doc, offset FROM terms ORDER BY doc, offset"
        ):
            streams[doc].append(term)
        return streams
    finally:
        db.close()
