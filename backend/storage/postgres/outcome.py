"""What became of a commit whose reply never came: found out, never retried blindly.

A ``COMMIT`` can be lost with its connection (the server killed, a failover, a dropped
socket) before or after the server committed. Running the transaction again could apply it
twice (an append stored twice, a compare-and-set failing against its own first write);
reporting a failure could hide a write that is there. So each write transaction records a
:class:`Witness` with its first statement, at no extra round trip: the bump of its scope's
``_scopes`` row, pipelined with ``BEGIN``, also writes a random token into the row and
returns the transaction's id (``pg_current_xact_id()``), the version it gives the scope and
the server instance (``pg_postmaster_start_time()``). After a lost reply, :func:`resolve`
asks the primary reachable now (the same one, or the standby promoted in its place):

* our token still in the row: it **committed**;
* same server instance: ``pg_xact_status`` of our id is the answer (ids only grow within one
  server run); a transaction still "in progress" there is our backend that never saw the
  ``COMMIT`` (the socket dropped on the way): it is terminated (only if it still runs our
  transaction), so it aborts, and asked again;
* another instance (failover, restart): ids the old primary handed out but never shipped are
  handed out again, so "committed" may be someone else's transaction: it counts only if the
  scope's version proves nothing (then the outcome is **unknown**); "aborted", or an id this
  server has not reached yet, means ours is not on this timeline: **aborted**.

The question is asked inside a transaction that takes an id and commits: its ``COMMIT`` waits
for the synchronous standby to hold everything written before it, our commit included, so a
"committed" answer is durable (a backend killed while waiting for the standby has committed
locally only, and shows its rows at once: PostgreSQL's documented caveat). While the primary
cannot be reached (a failover in progress) the question is asked again until
:data:`RESOLVE_WAIT_S`; after that the outcome is **unknown**.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import psycopg
from psycopg_pool import PoolTimeout

if TYPE_CHECKING:
    from backend.storage.postgres.engine import PostgresEngine

Outcome = Literal["committed", "aborted", "unknown"]

RESOLVE_WAIT_S = 60.0
"""How long a lost commit is asked about before it is reported unknown: longer than a Patroni
failover (``ttl`` + ``loop_wait`` + promotion: ~15 s with the settings docs/scaling.md gives)."""
FIRST_ASK_AGAIN_S = 0.05
LAST_ASK_AGAIN_S = 2.0

BUMP = (
    "UPDATE _scopes SET version = version + 1, token = %s WHERE name = %s "
    "RETURNING pg_current_xact_id()::text, version, pg_postmaster_start_time()"
)
"""A write transaction's first statement: the scope's write lock and counter, and its witness."""

GUARDED_BUMP = (
    "WITH bump AS (UPDATE _scopes SET version = version + 1, token = ? WHERE name = ?"
    " AND version = ? RETURNING pg_current_xact_id()::text AS xid, version,"
    " pg_postmaster_start_time() AS started)"
)
""":data:`BUMP` as the first CTE of a statement that does a whole write transaction's work
(``PostgresScope.commit_if_unmoved``): it bumps only while the scope's version is still the
one given, and the rest of the statement writes only ``FROM bump``, so when anyone else
committed in between the statement writes nothing at all. Its first three parameters are the
token, the scope and that version; the statement's one row begins with the bump's columns
(``SELECT bump.*, ... FROM bump``): they are the transaction's witness."""

_TAKE_ID = "SELECT pg_current_xact_id()"
_ASK = """
SELECT s.token, s.version, pg_postmaster_start_time(),
       CASE WHEN %(xid)s::text IS NULL THEN NULL
            WHEN %(xid)s::text::xid8 >= pg_current_xact_id() THEN 'future'
            ELSE pg_xact_status(%(xid)s::text::xid8) END
FROM _scopes s WHERE s.name = %(name)s
"""
_END_ORPHAN = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE pid = %s AND backend_xid::text = %s
"""


@dataclass(frozen=True)
class Witness:
    """What a write transaction left to be recognised by (see the module docstring)."""

    token: int
    backend_pid: int
    xid: int | None = None
    version: int | None = None
    started: datetime | None = None

    @classmethod
    def from_bump(cls, token: int, backend_pid: int, row: Any) -> Witness:
        """From :data:`BUMP`'s row (None when the scope's row is gone: only the token)."""
        if row is None:
            return cls(token, backend_pid)
        return cls(token, backend_pid, int(row[0]), int(row[1]), row[2])


def new_token() -> int:
    return secrets.randbits(63)


def row_if_any(cursor: psycopg.Cursor[Any] | None) -> Any:
    """A pipelined statement's row, when its reply arrived before the connection was lost."""
    if cursor is None:
        return None
    try:
        return cursor.fetchone()
    except psycopg.Error:
        return None


def resolve(engine: PostgresEngine, scope: str, witness: Witness, wait_s: float) -> Outcome:
    """The outcome of ``witness``'s commit in ``scope``, asked until ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    pause = FIRST_ASK_AGAIN_S
    while True:
        remaining = deadline - time.monotonic()
        try:
            outcome = _ask(engine, scope, witness, max(remaining, 0.1))
        except (psycopg.Error, PoolTimeout):
            outcome = None  # no primary yet (a failover in progress), or it went away again
        if outcome is not None:
            return outcome
        if time.monotonic() + pause > deadline:
            return "unknown"
        time.sleep(pause)
        pause = min(pause * 2, LAST_ASK_AGAIN_S)


def _ask(engine: PostgresEngine, scope: str, witness: Witness, timeout: float) -> Outcome | None:
    """One question to the primary; None when it must be asked again."""
    conn = engine.connection(timeout)
    try:
        with conn.transaction():
            conn.execute(
                _TAKE_ID
            )  # its COMMIT waits for the standby; ids past it are not handed out
            xid = None if witness.xid is None else str(witness.xid)
            row = conn.execute(_ASK, {"xid": xid, "name": scope}).fetchone()
        outcome = judge(witness, row)
        if outcome is None and row is not None and row[2] == witness.started:
            conn.execute(_END_ORPHAN, (witness.backend_pid, str(_short_xid(witness))))
        return outcome
    finally:
        engine.pool.putconn(conn)


def judge(witness: Witness, row: Any) -> Outcome | None:
    """The outcome ``row`` (token, version, instance, status of our id) shows, or None while
    our transaction is still in progress."""
    if row is None:
        return "unknown"  # the scope's row is gone: nothing to recognise the commit by
    token, version, started, status = row[0], row[1], row[2], row[3]
    if token == witness.token:
        return "committed"
    if witness.xid is None:
        return "unknown"  # the reply to the first statement was lost too: no id to ask about
    if status == "in progress":
        return None
    if status in ("aborted", "future"):
        return "aborted"
    if status == "committed":
        if started == witness.started:
            return "committed"
        if witness.version is not None and version < witness.version:
            return "aborted"  # had ours committed, the version would have reached ours
    return "unknown"  # an id handed out again on a new timeline, or too old to look up


def _short_xid(witness: Witness) -> int:
    """The 32-bit id ``pg_stat_activity.backend_xid`` shows for our 64-bit one."""
    assert witness.xid is not None
    return witness.xid & 0xFFFF_FFFF
