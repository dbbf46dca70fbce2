"""Copying a package's tables from one scope to another, across engines (``chats migrate``).

The SQL of a table belongs to its package (``tests/test_table_ownership.py``): each package's
``migration`` module names its tables as :class:`CopiedTable` values, and this module only runs
the statements those values spell, so it never names a table itself.

What differs between the engines and is handled here, once:

* on PostgreSQL a per-person or per-chat table leads with ``scope`` (the scope's name, see
  ``docs/architecture.md`` "Storage engines"); a server-wide table (accounts, settings,
  sharing) does not;
* a 0/1 flag on SQLite is a ``boolean`` on PostgreSQL (:attr:`CopiedTable.flags`);
* an identity column on PostgreSQL is written as it was read (``OVERRIDING SYSTEM VALUE``),
  and its sequence is moved past the largest copied value, so the next row the app writes
  takes a fresh number (:func:`advance_identity`);
* text bound for PostgreSQL passes the storage text rule (:mod:`backend.storage.text`):
  a row stored on SQLite before the rule holds a U+0000 PostgreSQL refuses.

Rows are read in key order and written in batches inside the caller's transaction, so a copy
that fails leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from backend.storage.scope import Scope
from backend.storage.text import well_formed_text

BATCH_ROWS = 500
"""Rows per ``executemany``: bounded memory, few round trips."""


@dataclass(frozen=True, slots=True)
class CopiedTable:
    """One table copied row for row: its columns (without PostgreSQL's ``scope``)."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]  # the order rows are read and written in
    per_scope: bool = True  # on PostgreSQL, every row leads with its scope's name
    flags: tuple[str, ...] = ()  # 0/1 on SQLite, boolean on PostgreSQL
    identity: str | None = None  # PostgreSQL's GENERATED ALWAYS AS IDENTITY column


@dataclass(slots=True)
class Copied:
    """What a copy wrote: rows, and the bytes of their text and binary values."""

    rows: int = 0
    bytes: int = 0
    per_table: dict[str, int] = field(default_factory=dict)

    def add(self, other: Copied) -> None:
        self.rows += other.rows
        self.bytes += other.bytes
        for name, count in other.per_table.items():
            self.per_table[name] = self.per_table.get(name, 0) + count

    def count(self, table: str) -> int:
        return self.per_table.get(table, 0)


def _scoped(scope: Scope, table: CopiedTable) -> bool:
    return table.per_scope and scope.engine_kind == "postgresql"


def scope_name_of(scope: Scope) -> str:
    """A PostgreSQL scope's name (the key its package's rows lead with)."""
    name = getattr(scope, "name", None)
    assert isinstance(name, str), "a PostgreSQL scope is named"
    return name


def _where_scope(scope: Scope, table: CopiedTable) -> tuple[str, tuple[Any, ...]]:
    if _scoped(scope, table):
        return " WHERE scope = ?", (scope_name_of(scope),)
    return "", ()


def select_rows(scope: Scope, table: CopiedTable) -> Iterable[Any]:
    """Every row of ``table`` in ``scope``, in key order, columns as :attr:`columns`; none
    when the table was never made there (a store makes its tables when first opened: a
    directory nobody imported into has no import sources)."""
    if not table_exists(scope, table.name):
        return ()
    where, params = _where_scope(scope, table)
    sql = (
        f"SELECT {', '.join(table.columns)} FROM {table.name}{where} "
        f"ORDER BY {', '.join(table.key)}"
    )
    return scope.iterate(sql, params)


def clear_rows(scope: Scope, table: CopiedTable | str, *, per_scope: bool = True) -> None:
    """Delete ``table``'s rows of ``scope`` (of the whole table on a server-wide one)."""
    if isinstance(table, str):
        table = CopiedTable(table, (), (), per_scope=per_scope)
    where, params = _where_scope(scope, table)
    scope.execute(f"DELETE FROM {table.name}{where}", params)


def _value_for(target_kind: str, value: Any, is_flag: bool) -> Any:
    if is_flag and value is not None:
        return bool(value) if target_kind == "postgresql" else int(bool(value))
    if target_kind == "postgresql" and isinstance(value, str):
        return well_formed_text(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes | bytearray | memoryview):
        return len(value)
    return 0


def insert_rows(target: Scope, table: CopiedTable, rows: Iterable[Sequence[Any]]) -> Copied:
    """Insert ``rows`` (values in :attr:`columns` order) into ``table`` of ``target``."""
    scoped = _scoped(target, table)
    columns = ("scope", *table.columns) if scoped else table.columns
    overriding = (
        " OVERRIDING SYSTEM VALUE"
        if table.identity is not None and target.engine_kind == "postgresql"
        else ""
    )
    sql = (
        f"INSERT INTO {table.name} ({', '.join(columns)}){overriding} "
        f"VALUES ({', '.join('?' for _ in columns)})"
    )
    prefix: tuple[Any, ...] = (scope_name_of(target),) if scoped else ()
    flags = [column in table.flags for column in table.columns]
    kind = target.engine_kind
    copied = Copied()
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        values = tuple(_value_for(kind, row[i], flags[i]) for i in range(len(flags)))
        copied.bytes += sum(_size(value) for value in values)
        batch.append((*prefix, *values))
        if len(batch) >= BATCH_ROWS:
            target.executemany(sql, batch)
            copied.rows += len(batch)
            batch = []
    if batch:
        target.executemany(sql, batch)
        copied.rows += len(batch)
    copied.per_table[table.name] = copied.rows
    return copied


def copy_table(source: Scope, target: Scope, table: CopiedTable) -> Copied:
    """Every row of ``table`` from ``source`` into ``target`` (call in a transaction)."""
    copied = insert_rows(target, table, select_rows(source, table))
    if table.identity is not None:
        advance_identity(target, table)
    return copied


def copy_tables(source: Scope, target: Scope, tables: Sequence[CopiedTable]) -> Copied:
    """Clear then copy each of ``tables`` (parents first, as listed)."""
    copied = Copied()
    for table in reversed(tables):
        clear_rows(target, table)
    for table in tables:
        copied.add(copy_table(source, target, table))
    return copied


def advance_identity(target: Scope, table: CopiedTable) -> None:
    """Move a PostgreSQL identity sequence past the largest value ``table`` holds (every
    scope's: the sequence is the table's), so rows written later never collide; SQLite's
    AUTOINCREMENT follows an explicit value by itself."""
    if target.engine_kind != "postgresql" or table.identity is None:
        return
    target.execute(
        f"SELECT setval(pg_get_serial_sequence(?, ?), "
        f"greatest((SELECT max({table.identity}) FROM {table.name}), 1))",
        (table.name, table.identity),
    )


def table_exists(scope: Scope, name: str) -> bool:
    """Whether ``scope``'s engine holds table ``name`` (without creating anything)."""
    if scope.engine_kind == "postgresql":
        row = scope.query_one("SELECT to_regclass(?) IS NOT NULL", (name,))
    else:
        row = scope.query_one(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        )
    return row is not None and bool(row[0])


def column_names(scope: Scope, name: str) -> list[str]:
    """The columns of table ``name`` as the engine made them (a drift check's input)."""
    if scope.engine_kind == "postgresql":
        rows = scope.query(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
            (name,),
        )
        return [row[0] for row in rows]
    return [row[1] for row in scope.query(f"PRAGMA table_info({name})")]


def copy_scope(
    source: Scope,
    target: Scope,
    tables: Sequence[CopiedTable],
    *,
    prepare: Callable[[Scope], object],
    after: Sequence[str] = (),
    derived: Sequence[str] = (),
) -> Copied:
    """A whole scope of one package: its schema made on ``target`` by the package's own store
    (``prepare``), then in one transaction its tables cleared and copied, then ``after``
    (statements the package runs once its rows are in, e.g. moving a counter).

    ``derived``: tables the target engine builds itself from the copied rows (search
    indexes): cleared, never copied, so the target's own code rebuilds them."""
    prepare(target)
    with target.transaction():
        for name in derived:
            clear_rows(target, name)
        copied = copy_tables(source, target, tables)
        for statement in after:
            target.execute(statement)
    return copied
