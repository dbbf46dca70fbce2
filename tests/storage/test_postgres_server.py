"""The tests' own PostgreSQL server (tests/support/postgres_server.py): started on demand as
an unprivileged user, one empty database per test, gone at the end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.conftest import ROOT
from tests.support.postgres_server import ROLE, start_postgres


def test_each_test_gets_an_empty_namespace_of_its_own(postgres_server, postgres_url):
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
        conn.execute("CREATE TABLE mine (x int)")
        encoding, collation = conn.execute(
            "SELECT pg_encoding_to_char(encoding), datcollate FROM pg_database "
            "WHERE datname = current_database()"
        ).fetchone()
    assert tables == (0,)
    assert (encoding, collation) == ("UTF8", "C")
    with postgres_server.fresh_database() as other, psycopg.connect(other) as conn:
        assert other != postgres_url
        assert conn.execute("SELECT to_regclass('mine')").fetchone() == (None,)


def test_a_namespace_is_dropped_when_its_test_is_done(postgres_server):
    with postgres_server.fresh_database() as url, psycopg.connect(url) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
    with psycopg.connect(postgres_server.admin_url) as conn:
        assert conn.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone() == (None,)


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


_STARTER = """
from tests.support.postgres_server import start_postgres
server = start_postgres()
print(server.process.pid, server.folder, flush=True)
import time
time.sleep(600)
"""


@pytest.mark.skipif(bool(os.environ.get("CHATS_TEST_POSTGRES_URL")), reason="a given server")
def test_a_killed_test_process_does_not_leave_its_server_running():
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    pid_text, folder = starter.stdout.readline().split()
    starter.kill()  # SIGKILL: no finaliser runs
    starter.wait()
    try:
        deadline = time.monotonic() + 120  # generous: only a server that never stops fails
        while time.monotonic() < deadline and _running(int(pid_text)):
            time.sleep(0.1)
        assert not _running(int(pid_text))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes (its parent, the killed starter, is gone too).
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()
