"""A throwaway PostgreSQL server for tests, started by the tests themselves.

``initdb`` runs into a fresh folder under the system temporary folder, as an unprivileged user
(PostgreSQL refuses to run as root, and tests run as root here: ``nobody`` owns the folder
and the server; as any other user, that user does). The server listens on a free loopback
port only (no Unix socket outside its folder), with settings fit for tests: no fsync, no
full-page writes, minimal WAL, and passwords checked by ``md5`` rather than SCRAM (a SCRAM
login costs the client ~5 ms of PBKDF2; tests log in a few thousand times). Its one role has
a random password, so the URLs tests get carry a password exactly as a deployment's do (what
must never be printed), and a wrong one is refused.

One server per test process, started by the first test that asks for it (the session-scoped
``postgres_server`` fixture in ``tests/conftest.py``) and removed, folder and all, at the end.
A test process killed outright cannot remove it: its watchdog does (tests/support/watchdog.py),
and the next start removes folders older than :data:`STALE_AFTER_S` whose server is gone (a
watchdog killed too).
Under pytest-xdist each worker has its own: nothing is shared, nothing can be left to a
worker that finished first. ``CHATS_TEST_POSTGRES_URL`` (an admin URL of a server someone
else runs) skips the start: tests then create and drop their databases there.

Each test gets a namespace of its own (:meth:`PostgresServer.fresh_database`): a schema in
the server's one test database, named first in the URL's ``search_path``, dropped with all it
holds at the end of the test. A ``CREATE DATABASE`` per test cost 0.7-2 s on the loaded
2-core machine; a schema costs milliseconds and isolates the same way (every table the
stores and the engine create lands in it). A test asking for ``storage`` may get a schema an
earlier test emptied, under a new name (tests/support/recycled_schemas.py).
"""

from __future__ import annotations

import itertools
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from tests.support import recycled_schemas
from tests.support.deadlines import CHILD_START_S, WAIT_S
from tests.support.watchdog import Watchdog, watch

TEST_DATABASE = "chats_tests"

UNPRIVILEGED_USER = "nobody"
ROLE = "chats_test"
TEST_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_connections": "200",
    "shared_buffers": "32MB",
    "log_min_messages": "warning",
    "logging_collector": "off",
}
"""Fast and unsafe on power loss: a test server holds nothing worth keeping."""

STALE_AFTER_S = 1800


class _NotRecyclable(Exception):
    """Rolls back what an emptying that had to stop did (the schema is dropped instead)."""


_names = itertools.count(1)


def postgres_bin_dir() -> Path:
    """Debian's newest installed PostgreSQL (``/usr/lib/postgresql/<major>/bin``)."""
    override = os.environ.get("CHATS_PG_BIN")
    if override:
        return Path(override)
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run "
            "scripts/test once, or `apt-get install postgresql`"
        )
    return found[-1].parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PostgresServer:
    """A running server (or one given by ``CHATS_TEST_POSTGRES_URL``) and its admin URL."""

    admin_url: str
    folder: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    watchdog: Watchdog | None = None  # stops the server if the test process dies first
    _made: list[str] = field(default_factory=list)
    _test_database_ready: bool = False
    _admin: psycopg.Connection[Any] | None = None  # in the test database, kept for the run
    _admin_lock: threading.Lock = field(default_factory=threading.Lock)
    _emptied: list[str] = field(default_factory=list)  # schemas a next test may have
    _recycling: bool | None = None  # whether the DDL log is installed (None: not yet tried)

    def url(self, database: str) -> str:
        """The admin URL with another database name."""
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path="/" + quote(database)))

    def create_database(self, name: str | None = None) -> str:
        """A new, empty database (``UTF8``, collation ``C``); returns its URL."""
        name = name or f"t_{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING UTF8 LOCALE "C"')
        self._made.append(name)
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self._made:
            self._made.remove(name)

    @contextmanager
    def fresh_database(self, *, recycled: bool = False) -> Iterator[str]:
        """The URL of an empty namespace for one test (see the module docstring), dropped
        when the test is done. ``recycled``: it may be one an earlier test emptied, holding
        the application's tables, migrated, and no rows of theirs but the migrations' own
        (tests/support/recycled_schemas.py); emptied again afterwards when that can be proved,
        else dropped."""
        schema = f"{recycled_schemas.SCHEMA_PREFIX}{os.getpid()}_{next(_names)}"
        reused = self._emptied.pop() if recycled and self._emptied else None
        if reused is None:
            self._admin_execute(f'CREATE SCHEMA "{schema}"')
        else:  # a new name: no two tests see the same URL
            self._admin_execute(f'ALTER SCHEMA "{reused}" RENAME TO "{schema}"')
        try:
            yield f"{self.url(TEST_DATABASE)}?options=-csearch_path%3D{schema}"
        finally:
            if not (recycled and self._recycling and self._emptied_for_next_test(schema)):
                self._admin_execute(recycled_schemas.drop_sql(schema, logged=bool(self._recycling)))

    def _emptied_for_next_test(self, schema: str) -> bool:
        """Empty ``schema`` and keep it for a next test, if the server can prove nothing but
        rows is left of this one (tests/support/recycled_schemas.py)."""
        try:
            with self._admin_lock:
                conn = self._admin_connection()
                with conn.transaction():  # a refusal rolls back what the emptying began
                    conn.execute("SET LOCAL lock_timeout = '2s'")  # a test's leftover lock
                    if recycled_schemas.why_not_emptied(conn, schema) is not None:
                        raise _NotRecyclable
        except (_NotRecyclable, psycopg.Error):
            return False
        self._emptied.append(schema)
        return True

    def _admin_execute(self, sql: str) -> None:
        """Run ``sql`` in the test database on one connection kept for the whole run: a
        connection per CREATE / DROP SCHEMA cost two logins (~4.5 ms of server CPU each) per
        test. Opened again if the server dropped it."""
        with self._admin_lock:
            conn = self._admin
            if conn is not None:
                try:
                    conn.execute(sql)
                    return
                except psycopg.OperationalError:
                    if not (conn.closed or conn.broken):
                        raise
            self._admin_connection().execute(sql)

    def _admin_connection(self) -> psycopg.Connection[Any]:
        """The kept connection, opened (and the test database made, the DDL log installed)
        when there is none or the server dropped it."""
        conn = self._admin
        if conn is not None and not (conn.closed or conn.broken):
            return conn
        self._ensure_test_database()
        conn = self._admin = psycopg.connect(self.url(TEST_DATABASE), autocommit=True)
        if self._recycling is None:
            try:
                recycled_schemas.install(conn)
                self._recycling = True
            except psycopg.Error:  # a server given without a superuser: schemas are dropped
                self._recycling = False
        return conn

    def _ensure_test_database(self) -> None:
        if self._test_database_ready:
            return
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (TEST_DATABASE,)
            ).fetchone()
        if exists is None:  # (a given server may have it from another run)
            self.create_database(TEST_DATABASE)
        self._test_database_ready = True

    def stop(self) -> None:
        """Stop the server this object started and remove its folder (nothing otherwise)."""
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.process is None:
            for name in list(self._made):  # a given server: leave it as it was
                self.drop_database(self.url(name))
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown: ends sessions, no wait
            try:
                self.process.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.watchdog is not None:
            self.watchdog.release()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres(settings: dict[str, str] | None = None) -> PostgresServer:
    """Run ``initdb`` into a new temporary folder and start a server on a free port.

    ``settings`` replace :data:`TEST_SETTINGS` entries (a benchmark turns fsync back on).
    Raises with the server's log when it does not come up.
    """
    given = os.environ.get("CHATS_TEST_POSTGRES_URL")
    if given:
        return PostgresServer(admin_url=given)
    bin_dir = postgres_bin_dir()
    _remove_stale_folders()
    folder = Path(tempfile.mkdtemp(prefix="chats-pg-"))
    as_user = _unprivileged_user()
    if as_user is not None:
        os.chown(folder, as_user.pw_uid, as_user.pw_gid)
    password = secrets.token_urlsafe(16)
    data = folder / "data"
    password_file = folder / "password"
    password_file.write_text(password + "\n")
    if as_user is not None:
        os.chown(password_file, as_user.pw_uid, as_user.pw_gid)
    run_as = {"user": as_user.pw_uid, "group": as_user.pw_gid} if as_user else {}
    try:
        subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", ROLE, "-A", "md5",
             f"--pwfile={password_file}", "-E", "UTF8", "--locale=C", "--no-sync"],
            check=True, capture_output=True, cwd=folder, **run_as,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {exc.stderr.decode(errors='replace')}") from exc
    password_file.unlink()
    port = free_port()
    options = {**TEST_SETTINGS, **(settings or {})}
    options.update(port=str(port), unix_socket_directories=str(folder))
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(bin_dir / "postgres"), "-D", str(data),
             *itertools.chain.from_iterable(("-c", f"{k}={v}") for k, v in options.items())],
            stdout=log, stderr=subprocess.STDOUT, cwd=folder, start_new_session=True, **run_as,
        )  # fmt: skip
    server = PostgresServer(
        admin_url=f"postgresql://{ROLE}:{quote(password, safe='')}@127.0.0.1:{port}/postgres",
        folder=folder,
        process=process,
        # SIGINT: a "fast" shutdown (ends sessions, no wait), then the folder goes.
        watchdog=watch(process, first_signal=signal.SIGINT, remove=folder),
    )
    deadline = time.monotonic() + CHILD_START_S  # a hang guard: it starts in about a second
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with psycopg.connect(server.admin_url, connect_timeout=2, autocommit=True) as conn:
                _store_the_password_as_md5(conn, password)
            return server
        except psycopg.OperationalError:
            time.sleep(0.1)
    log_text = log_path.read_text(errors="replace")[-4000:]
    server.stop()
    raise RuntimeError(f"PostgreSQL did not start:\n{log_text}")


def _store_the_password_as_md5(conn: psycopg.Connection[Any], password: str) -> None:
    """``initdb`` stores the password as a SCRAM verifier, and with one the server asks for
    SCRAM whatever ``pg_hba.conf`` says; stored again as md5, later logins skip the PBKDF2."""
    conn.execute("SET password_encryption = 'md5'")
    conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(ROLE), password))


def _unprivileged_user() -> pwd.struct_passwd | None:
    """Who runs the server: ``nobody`` when we are root, else the current user (None)."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam(UNPRIVILEGED_USER)


def _remove_stale_folders() -> None:
    """Folders of servers that are gone (a killed test process's), once they are old enough
    that no ``initdb`` can still be filling them."""
    now = time.time()
    for folder in Path(tempfile.gettempdir()).glob("chats-pg-*"):
        try:
            if now - folder.stat().st_mtime < STALE_AFTER_S or _server_alive(folder):
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _server_alive(folder: Path) -> bool:
    pid_file = folder / "data" / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
