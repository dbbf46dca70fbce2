"""Statistics for tables PostgreSQL has never analysed, taken inside the transaction that fills
them.

Until a table has been analysed once (a new database's first minute, before autovacuum gets to
it) the planner guesses that every equality keeps 0.5 % of the rows. For a key lookup on
``session_messages`` (``scope = ? AND session_id = ? AND id = ?``) the guess makes the primary
key and ``session_messages_by_seq`` cost the same, the planner takes the latter, and every
lookup filters the whole conversation: importing a long chain in one transaction grows with
the square of its length (``bench/pg_fresh_tables_bench.py``). ``ANALYZE`` run inside the
transaction counts the rows it wrote, so once a store has written enough rows to a table never
analysed, analysing it there plans the rest of the transaction, and every later one, on real
numbers. A table analysed before is left to autovacuum: this costs one catalog read per store,
once.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.storage.postgres.scope import PostgresScope

ROWS_BEFORE_ANALYZE = 256
"""Rows a store writes before it looks: enough for the sample to show a conversation's rows
share their ``session_id``, few enough that the guessed plans cost little before."""

_NEVER_ANALYZED = "SELECT count(*) FROM pg_class WHERE oid = ANY(?::regclass[]) AND reltuples < 0"


class FreshTableStatistics:
    """Analyses ``tables`` (inside the current transaction) after ``rows`` rows written through
    this object, if PostgreSQL has never analysed them; looks once."""

    def __init__(self, tables: Sequence[str], rows: int = ROWS_BEFORE_ANALYZE) -> None:
        self._tables = tuple(tables)
        self._rows_left = rows

    def wrote(self, db: PostgresScope) -> None:
        """Count one row written in ``db``'s open transaction."""
        if self._rows_left <= 0:
            return
        self._rows_left -= 1
        if self._rows_left > 0:
            return
        row = db.query_one(_NEVER_ANALYZED, (list(self._tables),))
        if row is not None and row[0]:
            db.execute(f"ANALYZE {', '.join(self._tables)}")
