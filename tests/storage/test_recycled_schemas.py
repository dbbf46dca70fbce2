"""A test namespace on PostgreSQL is used again only when nothing of its test can show
(tests/support/recycled_schemas.py): migrated tables stay, their counters set back, every other
row goes, and a schema holding anything else is dropped."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from backend.accounts import pg_store as accounts_tables
from backend.accounts.store import COMPONENT as ACCOUNTS
from backend.config import PostgresLocation, parse_storage
from backend.sessions import pg_schema as sessions_tables
from backend.sessions.store import MIGRATION_COMPONENT as SESSIONS
from backend.sharing import pg_store as sharing_tables
from backend.sharing.store import COMPONENT as SHARING
from backend.storage import Scope
from tests.support.recycled_schemas import COUNTERS
from tests.support.storage_engines import directory_scope


def scope_at(url: str) -> AbstractContextManager[Scope]:
    location = parse_storage(url)
    assert isinstance(location, PostgresLocation)
    return directory_scope(location, Path("/data"))


def schema_of(url: str) -> str:
    return url.rsplit("search_path%3D", 1)[1]


def one(url: str, sql: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return row[0]


@contextmanager
def used_and_handed_on(server: Any, use: Callable[[Scope], None]) -> Iterator[tuple[bool, str]]:
    """A test's schema used by ``use``: whether it was kept once that test was done, and
    the URL of the namespace the next test gets."""
    with server.fresh_database(recycled=True) as url, scope_at(url) as scope:
        use(scope)
    kept = one(url, f"SELECT to_regnamespace('{schema_of(url)}')") is not None
    with server.fresh_database(recycled=True) as next_url:
        assert schema_of(next_url) != schema_of(url)  # never the same URL
        yield kept, next_url


def sessions_with_a_row(scope: Scope) -> None:
    scope.migrate(SESSIONS, sessions_tables.MIGRATIONS)
    scope.execute("INSERT INTO session_scopes (scope) VALUES ('mine')")
    scope.execute("ANALYZE session_scopes")


def test_rows_go_tables_stay_and_the_next_test_sees_a_new_name(postgres_server):
    with used_and_handed_on(postgres_server, sessions_with_a_row) as (kept, next_url):
        assert kept
        assert one(next_url, "SELECT count(*) FROM _migrations WHERE component = 'sessions'") > 0
        assert one(next_url, "SELECT count(*) FROM session_scopes") == 0
        # as new to the planner as a table just made (the stores analyse those themselves)
        reltuples = "SELECT reltuples FROM pg_class WHERE oid = 'session_scopes'::regclass"
        assert one(next_url, reltuples) < 0


def test_a_table_of_the_tests_own_gets_the_schema_dropped(postgres_server):
    def own_table(scope: Scope) -> None:
        sessions_with_a_row(scope)
        scope.execute("CREATE TABLE mine (x int)")

    with used_and_handed_on(postgres_server, own_table) as (kept, next_url):
        assert not kept
        assert one(next_url, "SELECT to_regclass('mine')") is None


def test_a_component_of_the_tests_own_gets_the_schema_dropped(postgres_server):
    def own_component(scope: Scope) -> None:
        scope.migrate("made_here", [lambda db: db.execute("CREATE TABLE made_here (x int)")])

    with used_and_handed_on(postgres_server, own_component) as (kept, next_url):
        assert not kept
        assert one(next_url, "SELECT to_regclass('made_here')") is None


def test_a_counter_moved_by_the_test_is_set_back_to_the_migrations_value(postgres_server):
    def counted(scope: Scope) -> None:
        scope.migrate(ACCOUNTS, accounts_tables.MIGRATIONS)
        scope.execute("UPDATE account_event_counter SET last = 7")

    with used_and_handed_on(postgres_server, counted) as (kept, next_url):
        assert kept
        assert one(next_url, "SELECT last FROM account_event_counter") == 0


def test_a_counter_without_its_row_gets_the_schema_dropped(postgres_server):
    def emptied(scope: Scope) -> None:
        scope.migrate(ACCOUNTS, accounts_tables.MIGRATIONS)
        scope.execute("DELETE FROM account_event_counter")

    with used_and_handed_on(postgres_server, emptied) as (kept, _):
        assert not kept


def test_a_row_a_migration_wrote_outside_the_counters_gets_the_schema_dropped(postgres_server):
    def seeded(scope: Scope) -> None:
        scope.migrate(
            SESSIONS,
            [
                *sessions_tables.MIGRATIONS,
                lambda db: db.execute("INSERT INTO session_scopes (scope) VALUES ('seed')"),
            ],
        )

    with used_and_handed_on(postgres_server, seeded) as (kept, _):
        assert not kept


def test_a_migrations_counter_left_alone_is_kept(postgres_server):
    def seed_kept(scope: Scope) -> None:
        scope.migrate(ACCOUNTS, accounts_tables.MIGRATIONS)

    with used_and_handed_on(postgres_server, seed_kept) as (kept, next_url):
        assert kept
        assert one(next_url, "SELECT last FROM account_event_counter") == 0


@pytest.mark.fresh_schema
def test_the_counters_values_are_what_the_migrations_write(postgres_url):
    """The tables the accounts and sharing migrations seed (the components that seed rows)
    are the counters listed, with the values they are given."""
    with scope_at(postgres_url) as scope:
        scope.migrate(ACCOUNTS, accounts_tables.MIGRATIONS)
        scope.migrate(SHARING, sharing_tables.MIGRATIONS)
    seeded: dict[str, dict[str, object]] = {}
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename NOT IN ('_migrations', '_scopes')"
        ).fetchall()
        for (table,) in tables:
            rows = conn.execute(f'SELECT to_jsonb(t) FROM "{table}" t').fetchall()
            if rows:
                assert len(rows) == 1, table
                seeded[table] = {k: rows[0][0][k] for k in COUNTERS.get(table, rows[0][0])}
    assert seeded == COUNTERS
