"""One PostgreSQL database for a process: its connection pool and the scopes opened on it.

:class:`PostgresEngine` checks at start that the server can be reached (a clear
:class:`~backend.storage.postgres.errors.StorageUnavailableError` naming host and database
otherwise, never the password) and is new enough, then keeps one
``psycopg_pool.ConnectionPool``: connections in autocommit (scopes issue ``BEGIN`` /
``COMMIT`` themselves, as the SQLite ``Database`` does), ``lock_timeout`` equal to SQLite's
busy timeout (a lock wait fails with a ``StorageError`` instead of hanging). Connections are
not checked by a round trip before each use (``check_connection`` is one: 0.8 ms of a 2 ms
read on the loaded bench machine); :meth:`PostgresEngine.connection` instead polls the idle
socket (a system call): a connection the server already closed (a restart, a failover) is
discarded before anything is sent on it, so a write is rarely sent into a dead connection,
where its outcome would be in doubt. A read that still fails that way runs again on the next
connection (see ``PostgresScope._borrowed``).

Its bookkeeping tables (created once, under an advisory lock, so processes starting together
on an empty database create them once and raise nothing)::

    _scopes(name PK, version, token)          one row per scope: its write lock and counter,
                                              and the last commit's token (see outcome.py)
    _migrations(component, name, applied_at)  as in each SQLite file
"""

from __future__ import annotations

import select
import threading
import time
from collections import Counter

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import ConnStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from backend.config import PostgresLocation
from backend.storage.connection import BUSY_TIMEOUT_MS
from backend.storage.postgres.errors import check_server_version, unavailable
from backend.storage.postgres.rows import PgRow, pg_row_factory

CONNECT_TIMEOUT_S = 10
POOL_MAX = 16
"""Connections per process: a transaction pins one, a statement outside borrows one."""
POOL_WAIT_S = 5.0
"""How long a statement waits for a pooled connection before it fails as
:class:`~backend.storage.postgres.errors.StorageUnavailableError`, which a person reads as
"Storage unavailable ... Try again in a moment" (:mod:`backend.runtime.failures`).

Why 5 s: a request that waits longer than a few seconds is what a person sees as a hang
(30 s was the old value: a send that hung half a minute before saying anything). A server
restart (1-3 s) and the pool's first reconnect attempts fit inside it, so a short blip costs
a request a wait, not a failure; a longer outage, or a failover (~15 s under Patroni,
docs/scaling.md), fails each request fast with the typed error while the pool keeps
reconnecting in the background, and the next try succeeds once the server is back. A busy
pool never comes near it: a connection is held for one statement or one transaction
(milliseconds), never across a streamed reply. It is shorter than
:data:`CONNECT_TIMEOUT_S` on purpose: one connection attempt to a host that drops packets
may take that long, and the person is answered before it gives up. Read when an engine is
made (``PostgresEngine(pool_wait_s=...)`` or this module attribute: tests shorten it)."""
RECONNECT_WINDOW_S = 4.0
"""How long the pool retries one lost connection (psycopg_pool doubles its pause each time,
1, 2, 4, 8 s...) before giving up that attempt; :meth:`PostgresEngine.connection` asks again
at least this often, which starts a new one. With the pool's default (5 min) the pause reached
8-16 s during a failover: writes resumed ~10 s after the new primary accepted them
(bench/failover_bench.py: 29 s after a kill, the new leader elected at 19 s); now 0.2 s after."""
INFRASTRUCTURE_LOCK = 0x43484154  # "CHAT": pg_advisory_xact_lock key of the bookkeeping DDL
_INFRASTRUCTURE = """
SELECT pg_advisory_xact_lock({lock});
CREATE TABLE IF NOT EXISTS _scopes (
    name text COLLATE "C" PRIMARY KEY,
    version bigint NOT NULL DEFAULT 0,
    token bigint NOT NULL DEFAULT 0
);
ALTER TABLE _scopes ADD COLUMN IF NOT EXISTS token bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS _migrations (
    component text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    applied_at bigint NOT NULL,
    PRIMARY KEY (component, name)
);
"""


class PostgresEngine:
    """See the module docstring. Thread-safe; one per database per process."""

    kind = "postgresql"

    def __init__(
        self,
        location: PostgresLocation,
        *,
        pool_max: int = POOL_MAX,
        pool_wait_s: float | None = None,
    ) -> None:
        self.location = location
        self.pool_wait_s = POOL_WAIT_S if pool_wait_s is None else pool_wait_s
        """How long :meth:`connection` waits for a connection (see :data:`POOL_WAIT_S`)."""
        self.conninfo = _conninfo(location)
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                check_server_version(conn.info.server_version, location)
                with conn.transaction():
                    conn.execute(_INFRASTRUCTURE.format(lock=INFRASTRUCTURE_LOCK))
        except psycopg.Error as exc:
            raise unavailable(location, exc) from exc
        self.pool: ConnectionPool[psycopg.Connection[PgRow]] = ConnectionPool(
            self.conninfo,
            kwargs={"autocommit": True, "row_factory": pg_row_factory},
            min_size=1,
            max_size=pool_max,
            timeout=self.pool_wait_s,
            reconnect_timeout=RECONNECT_WINDOW_S,
            name=f"chats {location.describe()}",
            open=True,
        )
        self._lock = threading.Lock()
        self._closed = False
        self.lost_commits: Counter[str] = Counter()
        """Commits whose reply was lost, by how they were resolved (what operators and the
        failover bench read: "committed", "aborted", "unknown")."""

    def count_lost_commit(self, outcome: str) -> None:
        with self._lock:
            self.lost_commits[outcome] += 1

    def connection(self, timeout: float | None = None) -> psycopg.Connection[PgRow]:
        """A pooled connection the server has not visibly closed (see the module docstring);
        give it back with ``pool.putconn``. Raises ``PoolTimeout`` as ``pool.getconn`` does,
        after :attr:`pool_wait_s` unless ``timeout`` says otherwise."""
        deadline = time.monotonic() + (self.pool_wait_s if timeout is None else timeout)
        dead = 0
        while True:
            # Asked again at least every RECONNECT_WINDOW_S: the pool starts a new connection
            # attempt only when asked, and gives one up after that long.
            wait = max(min(RECONNECT_WINDOW_S, deadline - time.monotonic()), 0.01)
            try:
                conn = self.pool.getconn(wait)
            except PoolTimeout:
                if time.monotonic() >= deadline:
                    raise
                continue
            if dead >= self.pool.max_size or _looks_alive(conn):
                return conn
            dead += 1
            self.pool.putconn(conn)  # closed: the pool discards it and opens another

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.pool.close()

    @property
    def closed(self) -> bool:
        return self._closed


def _looks_alive(conn: psycopg.Connection[PgRow]) -> bool:
    """False when an idle connection's socket shows the server closed it: readable with
    nothing to read but the end (an idle server sends nothing else but notices)."""
    pgconn = conn.pgconn
    if pgconn.status != ConnStatus.OK:
        return False
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
        if readable:
            pgconn.consume_input()
    except (OSError, psycopg.Error):
        return False
    return pgconn.status == ConnStatus.OK


def _conninfo(location: PostgresLocation) -> str:
    """The URL with the session settings every connection gets (the URL's own ``options``
    come last, so a deployment may change them)."""
    given = conninfo_to_dict(location.url)
    options = " ".join(
        part
        for part in (f"-c lock_timeout={BUSY_TIMEOUT_MS}", str(given.get("options", "")))
        if part
    )
    return make_conninfo(
        location.url,
        options=options,
        application_name=str(given.get("application_name", "chats")),
        connect_timeout=str(given.get("connect_timeout", CONNECT_TIMEOUT_S)),
    )


__all__ = ["PoolTimeout", "PostgresEngine"]
