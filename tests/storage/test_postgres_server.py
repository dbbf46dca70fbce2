"""The tests' own PostgreSQL server (tests/support/postgres_server.py): started on demand as
an unprivileged user, one empty database per test, gone at the end."""

from __future__ import annotations

import os

import psycopg
import pytest

from tests.support.postgres_server import ROLE, start_postgres


def test_each_test_gets_an_empty_database_of_its_own(postgres_server, postgres_url):
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', "
            "'information_schema')"
        ).fetchone()
        encoding, collation = conn.execute(
            "SELECT pg_encoding_to_char(encoding), datcollate FROM pg_database "
            "WHERE datname = current_database()"
        ).fetchone()
    assert tables == (0,)
    assert (encoding, collation) == ("UTF8", "C")
    with postgres_server.fresh_database() as other:
        assert other != postgres_url


def test_a_database_is_dropped_when_its_test_is_done(postgres_server):
    with postgres_server.fresh_database() as url:
        psycopg.connect(url).close()
    with pytest.raises(psycopg.OperationalError, match="does not exist"):
        psycopg.connect(url).close()


@pytest.mark.skipif(bool(os.environ.get("CHATS_TEST_POSTGRES_URL")), reason="a given server")
def test_the_server_runs_unprivileged_on_loopback_and_leaves_nothing_behind():
    server = start_postgres()
    try:
        with psycopg.connect(server.admin_url) as conn:
            address = conn.execute("SELECT inet_server_addr()::text").fetchone()
            role = conn.execute("SELECT current_user").fetchone()
        assert address == ("127.0.0.1/32",)
        assert role == (ROLE,)
        assert server.process is not None and server.folder is not None
        owner = server.folder.stat().st_uid
        assert owner != 0 or os.geteuid() != 0  # never root's
        assert ":" in server.admin_url.split("@")[0].removeprefix("postgresql://")  # a password
    finally:
        server.stop()
    assert server.process.poll() is not None
    assert not server.folder.exists()
