"""Migrations on a PostgreSQL scope send their DDL together (backend/storage/postgres/
migrations.py): what a migration sees and what a failure reports are as if each statement ran
alone."""

from __future__ import annotations

import pytest

from backend.config import parse_storage
from backend.errors import StorageError
from backend.storage.postgres import PostgresEngine, PostgresScope


@pytest.fixture
def scope(postgres_url):
    engine = PostgresEngine(parse_storage(postgres_url))
    yield PostgresScope(engine, "m")
    engine.close()


def applied(scope):
    return [row[0] for row in scope.query("SELECT name FROM _migrations ORDER BY name")]


def test_a_failing_statement_is_named_and_its_migration_leaves_nothing(scope):
    def _m001_tables(db):
        db.execute("CREATE TABLE first_one (x int)")
        db.execute("CREATE TABLE second_one (x int)")
        db.execute("CREATE INDEX broken ON no_such_table (x)")
        db.execute("CREATE TABLE after_it (x int)")

    with pytest.raises(StorageError) as raised:
        scope.migrate("m", [_m001_tables])
    message = str(raised.value)
    assert 'relation "no_such_table" does not exist' in message
    assert "(in: CREATE INDEX broken ON no_such_table (x))" in message
    for table in ("first_one", "second_one", "after_it"):
        assert not scope.table_exists(table)
    assert applied(scope) == []


def test_a_migration_reads_what_it_created_before_and_in_order(scope):
    seen = []

    def _m001_create(db):
        db.execute("CREATE TABLE made (x int)")
        seen.append(db.table_exists("made"))
        db.execute("ALTER TABLE made ADD COLUMN y int")
        db.execute("INSERT INTO made (x, y) VALUES (?, ?)", (1, 2))

    def _m002_more(db):
        db.execute("ALTER TABLE made ADD COLUMN z int")
        rows = db.query("SELECT x, y, z FROM made")
        seen.append([tuple(row) for row in rows])

    assert scope.migrate("m", [_m001_create, _m002_more]) == ["_m001_create", "_m002_more"]
    assert seen == [True, [(1, 2, None)]]
    assert applied(scope) == ["_m001_create", "_m002_more"]
    assert scope.migrate("m", [_m001_create, _m002_more]) == []


def test_ddl_in_a_nested_transaction_that_rolls_back_is_undone_and_the_rest_applies(scope):
    def _m001_tries(db):
        db.execute("CREATE TABLE kept (x int)")
        with pytest.raises(StorageError), db.transaction():
            db.execute("CREATE TABLE dropped (x int)")
            db.execute("CREATE TABLE kept (x int)")  # exists: the savepoint rolls back
        db.execute("CREATE TABLE also_kept (x int)")

    assert scope.migrate("m", [_m001_tries]) == ["_m001_tries"]
    assert scope.table_exists("kept") and scope.table_exists("also_kept")
    assert not scope.table_exists("dropped")
