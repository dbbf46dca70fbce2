"""A stand-in for the Reflex app that ``chatsapp.live.fanout`` writes through, recording what it
would send: a real in-memory state manager and Reflex's own token manager (which socket
serves which tab); the socket server records each emit instead of writing it.

Used by the fan-out tests and by ``bench/stream_pieces_bench.py``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import reflex as rx
from reflex.istate.manager.memory import StateManagerMemory
from reflex.utils.token_manager import LocalTokenManager, SocketRecord


@dataclass
class Sockets:
    """Reflex's namespace as the fan-out uses it: the token manager, and emits recorded."""

    _token_manager: LocalTokenManager = field(default_factory=LocalTokenManager)
    sent: list[tuple[Any, list[str]]] = field(default_factory=list)

    async def emit(self, _event: str, update: Any, to: list[str]) -> None:
        self.sent.append((update, sorted(to)))

    def connect(self, tab: str) -> str:
        sid = f"sid-{tab}"
        record = SocketRecord(instance_id=self._token_manager.instance_id, sid=sid)
        self._token_manager.token_to_socket[tab] = record
        self._token_manager.sid_to_token[sid] = tab
        return sid


@dataclass
class App:
    state_manager: StateManagerMemory = field(default_factory=StateManagerMemory)
    event_namespace: Sockets = field(default_factory=Sockets)

    def set_contexts(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


async def link(app: App, shared_token: str, cls: type[rx.State], *tabs: str) -> None:
    """What a tab's link leaves in the shared state: its token in ``_linked_from``."""
    token = rx.BaseStateToken(ident=shared_token, cls=cls)
    async with app.state_manager.modify_state(token) as root:
        state = await root.get_state(cls)
        state._linked_from.update(tabs)
        root._clean()
