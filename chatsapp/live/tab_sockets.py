"""Which tabs' sockets have closed, so an event handled after its tab closed pins nothing.

Reflex may still handle a tab's events after the tab's socket closed: a tab closed (or cut off)
right after it opened a chat has its "open this chat" event processed *after* its disconnect
was heard. The bridge would then count the tab as watching for good — a pump task, the chat's
event log and the person's directory held until the process ends (the 2,000-chat soak kept
293 of 300 such tabs). So the bridge hears connects and disconnects here and asks
:func:`is_closed` before it lets a tab watch anything.

A token counts as closed from its socket's disconnect until a socket connects with it again
(Reflex reconnects a tab with the token it had). The memory of closed tokens is bounded: the
oldest are forgotten first, long after any of their events could still be in flight.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from chatsapp.auth.identity import connect_token
from chatsapp.reflex_seam import Environ, ReflexApp, hear_connects, hear_disconnects

CLOSED_MEMORY = 10_000  # closed tokens remembered (~100 B each)

_closed: OrderedDict[str, None] = OrderedDict()


def install(app: ReflexApp, on_closed: Callable[[str], None]) -> None:
    """Hear every socket of ``app`` open and close; ``on_closed(token)`` after each close."""

    async def connecting(_sid: str, environ: Environ) -> Environ:
        # Before Reflex's own connect: it handles the tab's first events inside it.
        reopened(connect_token(environ))
        return environ

    def disconnected(token: str) -> None:
        closed(token)
        on_closed(token)

    hear_connects(app, connecting)
    hear_disconnects(app, disconnected)


def closed(token: str) -> None:
    """The socket of ``token`` closed."""
    _closed[token] = None
    _closed.move_to_end(token)
    while len(_closed) > CLOSED_MEMORY:
        _closed.popitem(last=False)


def reopened(token: str) -> None:
    """A socket connected with ``token``: its events count again."""
    _closed.pop(token, None)


def is_closed(token: str) -> bool:
    """Whether ``token``'s socket closed and no socket has connected with it since."""
    return token in _closed


def forget() -> None:
    """Forget every closed token (tests start each case from nothing)."""
    _closed.clear()
