"""Rows and cursors of the PostgreSQL scope, shaped as the stores use SQLite's.

``PgRow`` answers ``row[0]`` and ``row["name"]`` like ``sqlite3.Row`` (one column-name map per
result, shared by its rows). ``PgResult`` is a finished statement: its rows are fetched before
the connection goes back to the pool, so a store may read them whenever it likes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
from psycopg.rows import RowMaker


class PgRow:
    """One row: by position or by column name (names as the statement spelled them)."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str, /) -> Any:
        if isinstance(key, str):
            try:
                return self._values[self._index[key]]
            except KeyError:
                raise IndexError(f"no such column: {key}") from None
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PgRow):
            return self._values == other._values and self._index == other._index
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._index, self._values, strict=True))!r})"


def pg_row_factory(cursor: psycopg.Cursor[Any]) -> RowMaker[PgRow]:
    """psycopg's row factory: one name map per result (as sqlite3.Row keeps one per cursor)."""
    description = cursor.description
    index = {column.name: i for i, column in enumerate(description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(tuple(values), index)

    return make


class PgResult:
    """A completed statement: ``fetchone`` / ``fetchall`` / iteration / ``rowcount``."""

    __slots__ = ("_position", "_rows", "rowcount")

    def __init__(self, rows: list[PgRow], rowcount: int) -> None:
        self._rows = rows
        self._position = 0
        self.rowcount = rowcount

    def fetchone(self) -> PgRow | None:
        if self._position >= len(self._rows):
            return None
        row = self._rows[self._position]
        self._position += 1
        return row

    def fetchall(self) -> list[PgRow]:
        rows = self._rows[self._position :]
        self._position = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[PgRow]:
        while (row := self.fetchone()) is not None:
            yield row
