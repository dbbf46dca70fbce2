"""Backup and restore of a PostgreSQL installation: every Chats table at one instant.

``backup_postgresql(location, out)`` reads the schema the URL names (its ``search_path``) in
**one** ``REPEATABLE READ, READ ONLY`` transaction: each table's shape from the catalogs and
its rows with ``COPY … TO STDOUT``, all from the same snapshot, so the backup is one committed
state of every person and every chat together (a chat's message and the directory's index of
it can never disagree), taken while the app serves. Writers are never stopped.

The backup is one ``.zip``: ``backup.json`` (``"engine": "postgresql"``, the tables in order),
``postgresql/schema.json`` (each table's columns, constraints and other indexes, as the
server itself prints them) and ``postgresql/<table>.copy`` (COPY's text format).

``restore_postgresql(backup, location)`` writes it into a schema that holds no rows (a new
database or schema; the engine's own empty bookkeeping tables may be there already): tables
first, then the rows, then keys and indexes, then identity counters, in one transaction, so a
failed restore leaves the schema as it was. A schema holding any row is refused, naming the
first table found, before anything is written: a restore never merges into live data.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from backend.clock import now_ms
from backend.config import PostgresLocation
from backend.errors import InvalidInputError
from backend.storage.postgres.errors import unavailable

# The backup zip's manifest, as the data folder's backups write it (backend.portability.backup,
# which loads no psycopg; tests/storage/test_postgresql_backup.py checks they agree).
BACKUP_FORMAT = "chats.backup"
BACKUP_VERSION = 1
MANIFEST = "backup.json"
ENGINE = "postgresql"

Progress = Callable[[int, int], None]
SCHEMA_MEMBER = "postgresql/schema.json"

_TABLES = """
SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.relname
"""
_COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
       CASE WHEN a.attcollation <> t.typcollation THEN coll.collname END
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_collation coll ON coll.oid = a.attcollation
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
"""
# Primary keys and unique constraints before foreign keys (which need them), checks anywhere.
_CONSTRAINTS = """
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = %s AND contype IN ('p', 'u', 'c', 'f', 'x')
ORDER BY CASE contype WHEN 'f' THEN 1 ELSE 0 END, conname
"""
_INDEXES = """
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
WHERE i.indrelid = %s
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY i.indexrelid::regclass::text
"""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    not_null: bool
    default: str | None
    identity: str  # "" / "a" (ALWAYS) / "d" (BY DEFAULT)
    generated: str  # "" / "s" (STORED): never copied, the server computes it
    collation: str | None

    def ddl(self) -> sql.Composable:
        parts: list[sql.Composable] = [sql.Identifier(self.name), sql.SQL(self.type)]
        if self.collation:
            parts.append(sql.SQL("COLLATE {}").format(sql.Identifier(self.collation)))
        if self.identity:
            kind = "ALWAYS" if self.identity == "a" else "BY DEFAULT"
            parts.append(sql.SQL(f"GENERATED {kind} AS IDENTITY"))
        elif self.generated:
            parts.append(sql.SQL(f"GENERATED ALWAYS AS ({self.default}) STORED"))
        elif self.default is not None:
            parts.append(sql.SQL(f"DEFAULT {self.default}"))
        if self.not_null:
            parts.append(sql.SQL("NOT NULL"))
        return sql.SQL(" ").join(parts)


@dataclass(slots=True)
class Table:
    name: str
    columns: list[Column]
    constraints: list[tuple[str, str]] = field(default_factory=list)
    indexes: list[str] = field(default_factory=list)  # CREATE INDEX statements, unqualified

    @property
    def copied(self) -> list[str]:
        return [column.name for column in self.columns if not column.generated]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "columns": [list(vars_of(column)) for column in self.columns],
            "constraints": [list(pair) for pair in self.constraints],
            "indexes": self.indexes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Table:
        return cls(
            str(data["name"]),
            [Column(*values) for values in data["columns"]],
            [(str(name), str(text)) for name, text in data["constraints"]],
            [str(statement) for statement in data["indexes"]],
        )


def vars_of(column: Column) -> tuple[Any, ...]:
    return tuple(getattr(column, name) for name in Column.__slots__)


@dataclass(slots=True)
class SnapshotReport:
    tables: list[str] = field(default_factory=list)
    rows: int = 0


def backup_postgresql(
    location: PostgresLocation, out: Path, *, progress: Progress | None = None
) -> SnapshotReport:
    """Every table of the schema ``location`` names, at one instant, into the zip ``out``."""
    report = SnapshotReport()
    with (
        _connected(location) as conn,
        conn.transaction(),
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zip_file,
    ):
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        schema = conn.execute("SELECT current_schema()").fetchone()
        tables = _read_tables(conn, schema[0] if schema else "")
        for done, table in enumerate(tables, 1):
            copy = sql.SQL("COPY {} ({}) TO STDOUT").format(
                sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, table.copied))
            )
            with (
                zip_file.open(f"{ENGINE}/{table.name}.copy", "w") as member,
                conn.cursor() as cursor,
            ):
                with cursor.copy(copy) as rows:
                    for block in rows:
                        member.write(block)
                report.rows += cursor.rowcount
            report.tables.append(table.name)
            if progress is not None:
                progress(done, len(tables))
        zip_file.writestr(SCHEMA_MEMBER, json.dumps([t.to_json() for t in tables], indent=1))
        manifest = {
            "format": BACKUP_FORMAT,
            "version": BACKUP_VERSION,
            "engine": ENGINE,
            "created_at": now_ms(),
            "tables": report.tables,
            "rows": report.rows,
        }
        zip_file.writestr(MANIFEST, json.dumps(manifest, indent=1))
    return report


def restore_postgresql(
    backup: Path, location: PostgresLocation, *, progress: Progress | None = None
) -> SnapshotReport:
    """The zip ``backup`` (made by :func:`backup_postgresql`) into the empty schema that
    ``location`` names, in one transaction (see the module docstring)."""
    tables, zip_file = _read_backup(backup)
    report = SnapshotReport()
    with zip_file, _connected(location) as conn, conn.transaction():
        _refuse_rows(conn)
        for table in tables:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(_name(table)))
            columns = sql.SQL(", ").join(column.ddl() for column in table.columns)
            conn.execute(sql.SQL("CREATE TABLE {} ({})").format(_name(table), columns))
        for done, table in enumerate(tables, 1):
            copy = sql.SQL("COPY {} ({}) FROM STDIN").format(
                _name(table), sql.SQL(", ").join(map(sql.Identifier, table.copied))
            )
            with zip_file.open(f"{ENGINE}/{table.name}.copy") as member, conn.cursor() as cursor:
                with cursor.copy(copy) as rows:
                    for block in iter(lambda: member.read(1 << 16), b""):
                        rows.write(block)
                report.rows += cursor.rowcount
            report.tables.append(table.name)
            if progress is not None:
                progress(done, len(tables))
        # Every table's own keys first: a foreign key needs the key it references, which may
        # belong to a table later in the order.
        for table in tables:
            _add_constraints(conn, table, foreign=False)
        for table in tables:
            _add_constraints(conn, table, foreign=True)
            _finish(conn, table)
    return report


def _add_constraints(conn: psycopg.Connection[Any], table: Table, *, foreign: bool) -> None:
    """The table's foreign keys (``foreign``) or its other constraints, rows being in."""
    for name, definition in table.constraints:
        if definition.startswith("FOREIGN KEY") != foreign:
            continue
        conn.execute(
            sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} {}").format(
                _name(table), sql.Identifier(name), sql.SQL(definition)
            )
        )


def _finish(conn: psycopg.Connection[Any], table: Table) -> None:
    """Indexes and identity counters of a table whose rows and keys are in."""
    for statement in table.indexes:
        conn.execute(sql.SQL(statement))
    for column in table.columns:
        if column.identity:
            conn.execute(
                sql.SQL(
                    "SELECT setval(pg_get_serial_sequence({}, {}), "
                    "coalesce((SELECT max({}) FROM {}), 0) + 1, false)"
                ).format(
                    sql.Literal(_name(table).as_string(conn)),
                    sql.Literal(column.name),
                    sql.Identifier(column.name),
                    _name(table),
                )
            )


def _name(table: Table) -> sql.Identifier:
    return sql.Identifier(table.name)


def _read_tables(conn: psycopg.Connection[Any], schema: str) -> list[Table]:
    tables = []
    for oid, name in conn.execute(_TABLES).fetchall():
        table = Table(name, [_column(row) for row in conn.execute(_COLUMNS, (oid,)).fetchall()])
        table.constraints = [(n, d) for n, d in conn.execute(_CONSTRAINTS, (oid,)).fetchall()]
        table.indexes = [
            _unqualified(row[0], schema) for row in conn.execute(_INDEXES, (oid,)).fetchall()
        ]
        tables.append(table)
    return tables


def _column(row: tuple[Any, ...]) -> Column:
    name, type_, not_null, default, identity, generated, collation = row
    return Column(
        name,
        type_,
        not_null,
        None if identity else default,  # an identity's sequence is the server's, not ours
        identity,
        generated,
        collation,
    )


def _unqualified(statement: str, schema: str) -> str:
    """``CREATE INDEX … ON schema.table …`` as ``… ON table …`` (restored in another schema)."""
    for spelling in (f'"{schema}".', f"{schema}."):
        statement = statement.replace(f" ON {spelling}", " ON ")
    return statement


def _read_backup(backup: Path) -> tuple[list[Table], zipfile.ZipFile]:
    try:
        zip_file = zipfile.ZipFile(backup)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InvalidInputError(f"{backup}: not a backup ({exc})") from exc
    try:
        manifest = json.loads(zip_file.read(MANIFEST))
        if manifest.get("format") != BACKUP_FORMAT or manifest.get("engine") != ENGINE:
            raise ValueError("not a PostgreSQL backup of Chats")
        tables = [Table.from_json(item) for item in json.loads(zip_file.read(SCHEMA_MEMBER))]
        if [table.name for table in tables] != manifest.get("tables"):
            raise ValueError("its schema and its manifest name different tables")
    except (KeyError, ValueError, TypeError) as exc:
        zip_file.close()
        raise InvalidInputError(f"{backup}: not a PostgreSQL backup of Chats ({exc})") from exc
    return tables, zip_file


def _refuse_rows(conn: psycopg.Connection[Any]) -> None:
    """Refuse a schema that holds any row (a restore never merges into live data)."""
    for _oid, name in conn.execute(_TABLES).fetchall():
        found = conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 1").format(sql.Identifier(name)))
        if found.fetchone() is not None:
            raise InvalidInputError(
                f"the PostgreSQL schema to restore into is not empty (table {name} holds rows): "
                "restore into a new database or schema"
            )


@contextmanager
def _connected(location: PostgresLocation) -> Iterator[psycopg.Connection[Any]]:
    """A connection of its own (not the pool's: it holds one long transaction); a server that
    cannot be reached is named by host and database, never the password."""
    try:
        conn = psycopg.connect(location.url, autocommit=True)
    except psycopg.Error as exc:
        raise unavailable(location, exc) from exc
    with conn:
        yield conn
