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

A lease says who runs a conversation *now*; :func:`process_owner` / :func:`may_be_running`
answer the question a lease cannot once its store is per process (``InProcessLockStore``):
whether the process that claimed a run, as recorded on the run, can still be writing it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol, runtime_checkable

from backend.storage.processes import Signer, sign, signer_state

DEFAULT_LEASE_TTL_S = 30.0
DEFAULT_POLL_INTERVAL_S = 0.01


@runtime_checkable
class DistributedLockStore(Protocol):
    async def try_acquire(self, key: str, owner: str, ttl_s: float) -> bool: ...

    async def refresh(self, key: str, owner: str, ttl_s: float) -> bool: ...

    async def release(self, key: str, owner: str) -> bool: ...

    async def holder(self, key: str) -> str | None: ...


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


@contextlib.asynccontextmanager
async def hold(
    store: DistributedLockStore,
    key: str,
    owner: str,
    *,
    ttl_s: float = DEFAULT_LEASE_TTL_S,
    poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
) -> AsyncIterator[None]:
    """Wait for the lease on ``key``, keep it alive while the body runs, then release it."""
    while not await store.try_acquire(key, owner, ttl_s):
        await asyncio.sleep(poll_interval_s)

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(ttl_s / 3)
            await store.refresh(key, owner, ttl_s)

    beat = asyncio.ensure_future(heartbeat())
    try:
        yield
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        await store.release(key, owner)


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
