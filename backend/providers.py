"""Context across conversations: a chat's memory block kept on another object (the directory).

Python realisation of the RFC's ``RemoteContextProvider`` / ``RemoteSearchProvider``. They know
nothing about ``Chats`` or sessions: ``remote`` is anything with the directory's shared-context
methods (:class:`RemoteContextEndpoint`, :class:`RemoteSearchEndpoint`), in this process or
behind an RPC proxy.

Failure rule (RFC edge cases 9 and 10): **reads fail soft, writes raise.** ``get()`` and
``search()`` return ``None`` on any error from the remote (unreachable, closed, deleted), so a
chat keeps working in a memoryless mode and retries next turn. ``set()`` / ``append()`` let the
error propagate: a lost write must be visible to the caller.

``append()`` forwards to ``remote.append_shared_context`` when the remote has one: an atomic
append on the remote, no read-modify-write (RFC edge case 6). Without it, the fallback reads
and writes back; unlike the RFC's sketch its read is **not** fail-soft, because writing
``"" + delta`` after a failed read would silently replace the whole block.

The storage core is synchronous; async callers offload these calls to a thread.
"""

from __future__ import annotations

import logging
from typing import Protocol, runtime_checkable

log = logging.getLogger(__name__)

__all__ = [
    "RemoteContextEndpoint",
    "RemoteContextProvider",
    "RemoteSearchEndpoint",
    "RemoteSearchProvider",
]


@runtime_checkable
class RemoteContextEndpoint(Protocol):
    """What a context block needs from its remote (``append_shared_context`` is optional)."""

    def get_shared_context(self, label: str) -> str | None: ...

    def set_shared_context(self, label: str, content: str) -> None: ...


@runtime_checkable
class RemoteSearchEndpoint(Protocol):
    """What a searchable block needs from its remote."""

    def get_shared_context(self, label: str) -> str | None: ...

    def search_shared(self, label: str, query: str) -> str | None: ...

    def index_shared(self, label: str, key: str, content: str) -> None: ...


class RemoteContextProvider:
    """A writable context block whose storage is ``remote``'s shared context.

    ``namespace`` (optional) overrides the block's own label, so several blocks or several
    chats can point at one shared label (``"user_memory"``).
    """

    def __init__(self, remote: RemoteContextEndpoint, namespace: str | None = None) -> None:
        self.remote = remote
        self.namespace = namespace
        self.label = namespace or ""

    def init(self, label: str) -> None:
        self.label = self.namespace or label

    def get(self) -> str | None:
        try:
            return self.remote.get_shared_context(self.label)
        except Exception:  # fail-soft: an unreachable memory is an empty memory this turn
            log.warning("shared context %r unavailable; continuing without it", self.label)
            return None

    def set(self, content: str) -> None:
        self.remote.set_shared_context(self.label, content)

    def append(self, delta: str) -> None:
        append = getattr(self.remote, "append_shared_context", None)
        if callable(append):
            append(self.label, delta)
            return
        current = self.remote.get_shared_context(self.label) or ""
        self.remote.set_shared_context(self.label, current + delta)


class RemoteSearchProvider:
    """A searchable block: entries indexed on ``remote``, searched there with FTS."""

    def __init__(self, remote: RemoteSearchEndpoint, namespace: str | None = None) -> None:
        self.remote = remote
        self.namespace = namespace
        self.label = namespace or ""

    def init(self, label: str) -> None:
        self.label = self.namespace or label

    def get(self) -> str | None:
        try:
            return self.remote.get_shared_context(self.label)
        except Exception:
            log.warning("shared context %r unavailable; continuing without it", self.label)
            return None

    def search(self, query: str) -> str | None:
        try:
            return self.remote.search_shared(self.label, query)
        except Exception:
            log.warning("shared search %r unavailable; continuing without it", self.label)
            return None

    def set(self, key: str, content: str) -> None:
        self.remote.index_shared(self.label, key, content)
