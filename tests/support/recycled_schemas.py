"""Test namespaces on PostgreSQL used again instead of made anew, when nothing can tell.

A fresh schema costs the server ~0.1 s of CPU per component the test opens (a person's
directory ~0.17 s, a conversation store ~0.1 s: the DDL of the migrations), and the suite has
~1,300 PostgreSQL tests. So when a test is done, its schema is emptied and handed to the next
test, migrated, as a deployment's database is after a restart, when the server can prove the
test left nothing behind but rows. The non-browser half alone, on 2 quiet cores: 906 → 699
CPU-seconds, 9:01 → 7:04.

* **No DDL but the migrations'.** An event trigger logs every DDL command in a test schema
  with its transaction; each one must belong to a transaction that applied a migration (the
  ``xmin`` of a ``_migrations`` row), or be the engine's bookkeeping tables (``_scopes``,
  ``_migrations``, set up again by every engine that starts). A schema in which a test
  made, altered or dropped anything else is dropped.
* **Only the application's components.** Every ``_migrations`` row names a component of a
  ``backend`` package; a test's own component (a migration test's) never passes.
* **The migrations' own rows set back.** An event counter a migration seeds
  (:data:`COUNTERS`) must still hold its one row, which is set back to the values the
  migration gave it (a test that moved one was, before, ~90 of the ~100 schemas dropped per
  run); any other table holding a row a migration wrote (its ``xmin``) gets the schema
  dropped.

Then every other row is deleted (the scopes' counters of ``_scopes`` too), sequences
restart, and the planner sees every table as never analysed, as it sees a new one (the stores
rely on that, backend/storage/postgres/statistics.py); a schema over :data:`MAX_BYTES` is
dropped instead. The next test gets the schema under a new name, so no two tests ever see the
same URL. It may hold the tables of components that test never opens: a test that must see
migrations run on an empty database, lists tables, or makes a table of its own with an
application table's name asks for ``postgres_url`` or is marked ``fresh_schema``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

SCHEMA_PREFIX = "t_"
"""Every test schema's name starts so; the DDL log keeps nothing of other schemas."""
_LIKE_TEST_SCHEMA = SCHEMA_PREFIX.replace("_", "\\_") + "%"

COUNTERS = {"account_event_counter": {"last": 0}, "share_event_counter": {"last": 0}}
"""The tables a migration seeds (one row each, an event counter), with the row's values as
the migration wrote them (tests/storage/test_recycled_schemas.py checks them against the
migrations). A table missing here whose migration seeds rows is never recycled (a slower
suite, never a wrong one)."""

MAX_BYTES = 4 << 20
"""A schema whose tables take more (a long import's) is dropped: its deleted rows stay on
disk until autovacuum, and the next test would read through them."""

_BACKEND = Path(__file__).resolve().parents[2] / "backend"
COMPONENTS = sorted(p.name for p in _BACKEND.iterdir() if (p / "__init__.py").exists())
"""``backend``'s packages: a migration component's name starts with one of them."""

INSTALL = rf"""
CREATE TABLE IF NOT EXISTS public._ddl_seen (schema_name text, xid text, object text);
CREATE OR REPLACE FUNCTION public._note_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public._ddl_seen
    SELECT c.schema_name, pg_current_xact_id()::xid::text, c.object_identity
    FROM pg_event_trigger_ddl_commands() c WHERE c.schema_name LIKE '{_LIKE_TEST_SCHEMA}';
END $$;
CREATE OR REPLACE FUNCTION public._note_drop() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public._ddl_seen
    SELECT d.schema_name, pg_current_xact_id()::xid::text, d.object_identity
    FROM pg_event_trigger_dropped_objects() d WHERE d.schema_name LIKE '{_LIKE_TEST_SCHEMA}';
END $$;
DROP EVENT TRIGGER IF EXISTS _note_ddl;
DROP EVENT TRIGGER IF EXISTS _note_drop;
CREATE EVENT TRIGGER _note_ddl ON ddl_command_end EXECUTE FUNCTION public._note_ddl();
CREATE EVENT TRIGGER _note_drop ON sql_drop EXECUTE FUNCTION public._note_drop();
CREATE OR REPLACE FUNCTION public._recycle(
    target text, components text[], counters jsonb, max_bytes bigint
)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    migrations text[];
    clean boolean;
    name text;
    kept bigint;
    columns text;
BEGIN
    IF to_regclass(format('%I._migrations', target)) IS NULL THEN
        RETURN 'no migrations table';
    END IF;
    EXECUTE format('SELECT array_agg(DISTINCT xmin::text), '
                   'bool_and(split_part(component, ''.'', 1) = ANY($1)) FROM %I._migrations',
                   target) USING components INTO migrations, clean;
    IF (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
        WHERE c.relnamespace = target::regnamespace AND c.relkind = 'r') > max_bytes THEN
        RETURN 'too big: its deleted rows would slow the next test down';
    END IF;
    IF migrations IS NULL OR NOT clean THEN
        RETURN 'nothing migrated, or a component of the test''s own';
    END IF;
    IF EXISTS (SELECT 1 FROM public._ddl_seen d WHERE d.schema_name = target
               AND d.xid <> ALL (migrations)
               AND d.object NOT LIKE target || '._scopes%'
               AND d.object NOT LIKE target || '._migrations%'
               AND d.object NOT LIKE '% on ' || target || '._scopes'
               AND d.object NOT LIKE '% on ' || target || '._migrations') THEN
        RETURN 'DDL of the test''s own';
    END IF;
    FOR name IN SELECT tablename FROM pg_tables
                WHERE schemaname = target AND tablename <> '_migrations' LOOP
        IF name = '_scopes' THEN  -- a migration bumps its scope's row: all of it goes
            EXECUTE format('DELETE FROM %I._scopes', target);
            CONTINUE;
        END IF;
        IF counters ? name THEN  -- one row, set back to the migration's values
            EXECUTE format('SELECT count(*) FROM %I.%I', target, name) INTO kept;
            IF kept <> 1 THEN
                RETURN format('%s rows in the counter %s', kept, name);
            END IF;
            SELECT string_agg(quote_ident(k), ', ') INTO columns
                FROM jsonb_object_keys(counters -> name) k;
            EXECUTE format('UPDATE %I.%I SET (%s) = (SELECT %s FROM '
                           'jsonb_populate_record(NULL::%I.%I, $1))',
                           target, name, columns, columns, target, name)
                USING counters -> name;
            CONTINUE;
        END IF;
        EXECUTE format('SELECT count(*) FROM %I.%I WHERE xmin::text = ANY ($1)', target, name)
            USING migrations INTO kept;
        IF kept <> 0 THEN
            RETURN format('%s rows of the migrations in %s', kept, name);
        END IF;
        EXECUTE format('DELETE FROM %I.%I WHERE xmin::text <> ALL ($1)', target, name)
            USING migrations;
    END LOOP;
    FOR name IN SELECT sequencename FROM pg_sequences WHERE schemaname = target LOOP
        EXECUTE format('ALTER SEQUENCE %I.%I RESTART', target, name);
    END LOOP;
    -- The planner's view of a new table: never analysed (the stores analyse such a table
    -- themselves once they have filled it, backend/storage/postgres/statistics.py).
    DELETE FROM pg_statistic s USING pg_class c
        WHERE s.starelid = c.oid AND c.relnamespace = target::regnamespace;
    UPDATE pg_class SET reltuples = -1, relpages = 0, relallvisible = 0
        WHERE relnamespace = target::regnamespace AND relkind IN ('r', 'i', 't');
    DELETE FROM public._ddl_seen WHERE schema_name = target;
    RETURN NULL;
END $$;
"""
"""Run once per test database (by its owner, a superuser: event triggers need one)."""


def install(conn: psycopg.Connection[Any]) -> None:
    conn.execute(INSTALL)


def why_not_emptied(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """Empty ``schema`` for the next test, its counters set back, if the server can prove it
    holds nothing else (see the module docstring): None. Else why not (the schema must be
    dropped: nothing is promised of what this left in it)."""
    row = conn.execute(
        "SELECT public._recycle(%s, %s, %s, %s)",
        (schema, COMPONENTS, json.dumps(COUNTERS), MAX_BYTES),
    ).fetchone()
    return None if row is None else row[0]


def drop_sql(schema: str, *, logged: bool) -> str:
    """Drop ``schema`` (a name this suite made), and what the DDL log holds of it when the log
    is installed."""
    drop = f'DROP SCHEMA "{schema}" CASCADE'
    return (
        f"{drop}; DELETE FROM public._ddl_seen WHERE schema_name = '{schema}'" if logged else drop
    )
