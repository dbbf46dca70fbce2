"""Who may be writing a chat: the names written into ``index_leases``, and whether they are gone.

Before a ``Chats`` instance opens a chat for writing it leases the chat under a holder name of
its own (:func:`new_holder`); a lease whose holder is gone marks a chat whose documents in the
directory's message index may lag its file, so the next ``Chats`` on the directory rebuilds it
(the lease rows themselves are SQL of :mod:`backend.chats.index_store`).

Invariants:

* A holder name is ``host:pid:random`` (:func:`backend.storage.processes.sign`), unique per
  ``Chats`` instance, so two instances in one process never release each other's leases.
* **Gone means can no longer write.** A holder of another process is gone when that process
  is (the rule of :mod:`backend.storage.processes`); one of this process is gone once its
  instance retired it. A live holder's leases are never taken over: it keeps its own chats
  current.
* :data:`REBUILD_HOLDER` is always gone: leasing a chat to it requests a rebuild (a schema
  change uses this, exactly as a crash would).
"""

from __future__ import annotations

import threading
import uuid

from backend.storage.processes import Signer, sign, signer_state

REBUILD_HOLDER = "rebuild"
"""A lease nobody holds: the chat's documents must be rebuilt from its file."""

_live_holders: set[str] = set()
_live_holders_lock = threading.Lock()


def new_holder() -> str:
    """A lease holder name for one ``Chats`` instance: ``host:pid:random``."""
    holder = sign(uuid.uuid4().hex[:12])
    with _live_holders_lock:
        _live_holders.add(holder)
    return holder


def retire_holder(holder: str) -> None:
    with _live_holders_lock:
        _live_holders.discard(holder)


def holder_is_gone(holder: str) -> bool:
    """True when the instance that wrote a lease can no longer be writing.

    The rule of :mod:`backend.storage.processes`; within this process, a holder is gone once
    its ``Chats`` instance retired it.
    """
    if holder == REBUILD_HOLDER:
        return True
    state = signer_state(holder)
    if state is Signer.THIS_PROCESS:
        with _live_holders_lock:
            return holder not in _live_holders
    return state is Signer.GONE
