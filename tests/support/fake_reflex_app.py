"""The one stand-in for the Reflex app, as ``chatsapp.reflex_seam`` uses it.

A real in-memory state manager (unless a test hands it another) and Reflex's own token manager
(which socket serves which tab); the socket namespace records each emit instead of writing it,
and plays Reflex's connect and disconnect handlers. Used by the fan-out and bridge tests and by
the benches (``bench/stream_pieces_bench.py``, ``bench/live_cost_bench.py``,
``bench/test_people_soak.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from reflex.istate.manager.memory import StateManagerMemory
from reflex.utils.token_manager import LocalTokenManager, SocketRecord
from reflex_base.registry import RegistrationContext

from chatsapp.live.bridge import LiveStates


@dataclass
class Sockets:
    """Reflex's socket namespace: its token manager, emits recorded, connect and disconnect."""

    _token_manager: LocalTokenManager = field(default_factory=LocalTokenManager)
    sent: list[tuple[Any, list[str]]] = field(default_factory=list)
    # Reflex handles a tab's first events inside its connect: a test may play them here.
    on_first_events: Callable[[str], None] = lambda _token: None

    @property
    def sid_to_token(self) -> dict[str, str]:
        return self._token_manager.sid_to_token

    async def emit(self, _event: str, update: Any, to: Any = None) -> None:
        self.sent.append((update, sorted(to) if isinstance(to, list) else [to]))

    def connect(self, tab: str) -> str:
        """A socket serving ``tab`` on this worker; its sid."""
        sid = f"sid-{tab}"
        record = SocketRecord(instance_id=self._token_manager.instance_id, sid=sid)
        self._token_manager.token_to_socket[tab] = record
        self.sid_to_token[sid] = tab
        return sid

    async def on_connect(self, sid: str, environ: dict[str, Any], auth: Any = None) -> None:
        token = environ["QUERY_STRING"].removeprefix("token=")
        self.sid_to_token[sid] = token
        self.on_first_events(token)

    def on_disconnect(self, sid: str) -> None:
        token = self.sid_to_token.pop(sid, None)
        if token is not None:
            self._token_manager.token_to_socket.pop(token, None)


def _registration_now() -> RegistrationContext | None:
    try:
        return RegistrationContext.get()
    except LookupError:
        return None


@dataclass
class FakeReflexApp:
    state_manager: Any = field(default_factory=StateManagerMemory)
    event_namespace: Sockets = field(default_factory=Sockets)
    middleware: list[Any] = field(default_factory=list)
    bridge: Any = None  # the live bridge a test built on this app, if any
    # The state classes registered when the app was made (the real app's registration), set
    # again by :meth:`set_contexts` in tasks started with a fresh context (the bridge's).
    registration: RegistrationContext | None = field(default_factory=_registration_now)

    def set_contexts(self) -> contextlib.AbstractContextManager[object]:
        stack = contextlib.ExitStack()
        if self.registration is not None and _registration_now() is None:
            token = RegistrationContext.set(self.registration)
            stack.callback(RegistrationContext.reset, token)
        return stack

    def add_middleware(self, middleware: Any, index: int | None = None) -> None:
        self.middleware.append(middleware)

    @contextlib.asynccontextmanager
    async def modify_state(self, token: Any, **_kwargs: Any) -> AsyncIterator[None]:
        raise AssertionError("the live layer writes shared tokens through chatsapp.live.fanout")
        yield None


def every_view(cls: type) -> LiveStates:
    """The bridge's targets, each of them ``cls`` (a stand-in with every field they need)."""
    return LiveStates(cls, cls, cls, cls, cls)


async def link(app: FakeReflexApp, shared_token: str, cls: type[rx.State], *tabs: str) -> None:
    """What a tab's link leaves in the shared state: its token in ``_linked_from``."""
    token = rx.BaseStateToken(ident=shared_token, cls=cls)
    async with app.state_manager.modify_state(token) as root:
        state = await root.get_state(cls)
        state._linked_from.update(tabs)
        root._clean()
