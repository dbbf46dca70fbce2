"""Which tabs' sockets have closed, so an event handled after its tab closed pins nothing.

Reflex may still handle a tab's events after the tab's socket closed: a tab closed (or cut off)
right after it opened a chat has its "open this chat" event processed *after* its disconnect
was heard. The bridge would then count the tab as watching for good — a pump task, the chat's
event log and the person's directory held until the process ends (the 2,000-chat soak kept
293 of 300 such tabs). So the bridge hears connects and disconnects here and asks
:meth:`TabSockets.is_closed` before it lets a tab watch anything.

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


class TabSockets:
    """The closed tokens of one worker's sockets (bounded by ``closed_memory``)."""

    def __init__(self, closed_memory: int = CLOSED_MEMORY) -> None:
        self.closed_memory = closed_memory
        self._closed: OrderedDict[str, None] = OrderedDict()

    def install(self, app: ReflexApp, on_closed: Callable[[str], None]) -> None:
        """Hear every socket of ``app`` open and close; ``on_closed(token)`` after each close."""

        async def connecting(_sid: str, environ: Environ) -> Environ:
            # Before Reflex's own connect: it handles the tab's first events inside it.
            self.reopened(connect_token(environ))
            return environ

        def disconnected(token: str) -> None:
            self.closed(token)
            on_closed(token)

        hear_connects(app, connecting)
        hear_disconnects(app, disconnected)

    def closed(self, token: str) -> None:
        """The socket of ``token`` closed."""
        self._closed[token] = None
        self._closed.move_to_end(token)
        while len(self._closed) > self.closed_memory:
            self._closed.popitem(last=False)

    def reopened(self, token: str) -> None:
        """A socket connected with ``token``: its events count again."""
        self._closed.pop(token, None)

    def is_closed(self, token: str) -> bool:
        """Whether ``token``'s socket closed and no socket has connected with it since."""
        return token in self._closed
