"""Per-conversation run serialisation: the ``DistributedLockStore`` interface and its
in-process implementation.

The contract is Redis-shaped on purpose (``SET key owner NX PX ttl`` / compare-and-delete),
so a Redis-backed store can replace :class:`InProcessLockStore` without touching the runtime:

* ``try_acquire`` is non-blocking and succeeds for exactly one owner at a time;
* a lease expires after ``ttl_s`` unless its owner ``refresh``es it (a crashed holder cannot
  wedge a conversation forever);
* ``release`` and ``refresh`` only act for the current owner (an expired, superseded owner
  cannot release someone else's lease).

:func:`hold` wraps this into an async context manager that waits for the lease (polling) and
keeps it alive with a heartbeat while the body runs.

**Fencing.** A store whose leases every process sees (Redis: :mod:`backend.runtime.
redis_locks`) is a :class:`FencedLockStore`: each acquisition gets a token larger than every
earlier one on that key. The run queue stores the token with the run's claim and the turn's
commit refuses when a newer token has claimed the conversation since (see
``RuntimeStore.check_fence``: on PostgreSQL a locking update of the conversation's fence row,
inside the commit's own transaction), so a holder whose lease expired (a stalled loop, a
paused VM, another machine took over) cannot commit over the run that replaced it. A
per-process store has no such token: its counters would not be comparable across processes.

A lease says who runs a conversation *now*; :func:`process_owner` / :func:`may_be_running`
answer the question a lease cannot once its store is per process (``InProcessLockStore``):
whether the process that claimed a run, as recorded on the run, can still be writing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from backend.storage.processes import Signer, sign, signer_state

logger = logging.getLogger(__name__)

DEFAULT_LEASE_TTL_S = 30.0
DEFAULT_POLL_INTERVAL_S = 0.01
# Waiting doubles the pause up to this: a lease held by another process for a whole reply
# would otherwise cost a Redis round trip every 10 ms.
MAX_POLL_INTERVAL_S = 0.1


@runtime_checkable
class DistributedLockStore(Protocol):
    async def try_acquire(self, key: str, owner: str, ttl_s: float) -> bool: ...

    async def refresh(self, key: str, owner: str, ttl_s: float) -> bool: ...

    async def release(self, key: str, owner: str) -> bool: ...

    async def holder(self, key: str) -> str | None: ...


@runtime_checkable
class FencedLockStore(DistributedLockStore, Protocol):
    """Leases shared by every process, each acquisition numbered (see the module docstring).

    Because every process sees the lease, a run left ``running`` while nobody holds its
    conversation's lease has lost its holder, whatever its process is doing.
    """

    async def fencing_token(self, key: str, owner: str) -> int | None:
        """The token of ``owner``'s newest acquisition of ``key`` (None: never acquired).

        Known to the acquiring store without a round trip, so it is the token of *that*
        acquisition even if the lease has expired since (the fence then refuses it).
        """
        ...

    async def advance_fence(self, key: str, floor: int) -> None:
        """Make the next token on ``key`` larger than ``floor`` (the store lost its counter)."""
        ...


@dataclass
class Lease:
    """A held lease: its fencing token (None for a per-process store), and whether a heartbeat
    found it taken over."""

    key: str
    owner: str
    token: int | None = None
    lost: bool = False


class InProcessLockStore:
    """Leases in a dict; correct across threads and event loops of one process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._leases: dict[str, tuple[str, float]] = {}

    def _live(self, key: str) -> tuple[str, float] | None:
        lease = self._leases.get(key)
        if lease is not None and lease[1] <= self._clock():
            del self._leases[key]
            return None
        return lease

    async def try_acquire(self, key: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            lease = self._live(key)
            if lease is not None and lease[0] != owner:
                return False
            self._leases[key] = (owner, self._clock() + ttl_s)
            return True

    async def refresh(self, key: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            lease = self._live(key)
            if lease is None or lease[0] != owner:
                return False
            self._leases[key] = (owner, self._clock() + ttl_s)
            return True

    async def release(self, key: str, owner: str) -> bool:
        with self._lock:
            lease = self._live(key)
            if lease is None or lease[0] != owner:
                return False
            del self._leases[key]
            return True

    async def holder(self, key: str) -> str | None:
        with self._lock:
            lease = self._live(key)
            return lease[0] if lease else None


def conversation_lock_key(chat_id: str) -> str:
    """The lease key that serialises the runs of one conversation."""
    return f"chats:conversation:{chat_id}"


class LeaseWaitAbandoned(Exception):
    """:func:`hold` stopped waiting for a lease because its ``abandon`` check said so."""


@contextlib.asynccontextmanager
async def hold(
    store: DistributedLockStore,
    key: str,
    owner: str,
    *,
    ttl_s: float = DEFAULT_LEASE_TTL_S,
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
    abandon: Callable[[], bool] | None = None,
) -> AsyncIterator[Lease]:
    """Wait for the lease on ``key``, keep it alive while the body runs, then release it.

    A refresh that finds the lease gone marks it ``lost`` (and stops refreshing: the lease
    is someone else's now); fencing keeps the late holder from committing. A refresh or the
    release that fails (the store unreachable) is logged, not raised: the lease then simply
    expires, and fencing covers the rest. While waiting, ``abandon()`` returning True raises
    :class:`LeaseWaitAbandoned` (a shutdown: another process may hold the lease for minutes).
    """
    pause = poll_interval_s
    while not await store.try_acquire(key, owner, ttl_s):
        if abandon is not None and abandon():
            raise LeaseWaitAbandoned(key)
        await asyncio.sleep(pause)
        pause = min(pause * 2, max(poll_interval_s, MAX_POLL_INTERVAL_S))
    lease = Lease(key, owner)
    if isinstance(store, FencedLockStore):
        lease.token = await store.fencing_token(key, owner)

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(ttl_s / 3)
            try:
                renewed = await store.refresh(key, owner, ttl_s)
            except Exception:
                logger.warning("could not renew lease %s; trying again", key, exc_info=True)
                continue
            if not renewed:
                lease.lost = True
                logger.warning("lease %s of %s expired and was not renewed", key, owner)
                return

    beat = asyncio.ensure_future(heartbeat())
    try:
        yield lease
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        try:
            await store.release(key, owner)
        except Exception:  # it expires on its own
            logger.warning("could not release lease %s", key, exc_info=True)


# ── which process claimed a run ─────────────────────────────────────


def process_owner(name: str) -> str:
    """``host:pid:name``: how a runtime of this process signs the runs it claims."""
    return sign(name)


def may_be_running(owner: str | None) -> bool:
    """Whether the *other* process that signed ``owner`` may still be writing its run.

    ``False`` for ``None`` (a run claimed before runs were signed) and for this process's own
    signatures: within a process, leases and the runtime's own bookkeeping decide. Otherwise
    the rule of :mod:`backend.storage.processes`.
    """
    return owner is not None and owner != "" and signer_state(owner) is Signer.ALIVE
