"""One change of a shared state, resolved once and sent to every tab linked to it.

Reflex fans a shared-state change out tab by tab: for each linked tab it locks the tab's state,
locks the shared token again, patches the shared state into the tab's tree, resolves that tab's
delta twice (once to refresh computed vars, once to send) and emits it. That cost ~14 ms per
receiving tab on a loaded box: 200 tabs of one person waited 3.8 s (p95) for a rename, and
every streamed frame paid it once per watching tab.

None of that work depends on the receiving tab: no computed var of this app reads a shared
state (``tests/ui/test_shared_fanout.py`` pins it), and a fan-out never navigates, so the tab's
own vars are unchanged. So :func:`shared_change` writes the shared token, resolves the delta of
its shared states once, and sends that one update to every linked tab: one JSON encoding for
all the sockets of this worker, and Reflex's lost-and-found relay (Redis) for tabs that another
worker serves.

Who receives an entry: exactly the tabs in that shared state's ``_linked_from`` — Reflex's own
record of the tabs linked to this token, the set its own fan-out uses (a tab enters it when it
links, leaves it when it links elsewhere). Only the shared states' entries are sent: the shared
token's root vars (its router, the route's ``chat_id``) belong to no tab and are dropped, so
no value of one tab (or of one token) reaches a tab that is not linked to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import reflex as rx
from reflex.istate.shared import SharedState, SharedStateBaseInternal
from reflex.middleware.middleware import Middleware
from reflex.state import StateUpdate
from reflex.utils.token_manager import RedisTokenManager
from reflex_base.constants import SocketEvent
from reflex_base.constants.route import ROUTER_DATA, ROUTER_VARS

Delta = dict[str, dict[str, Any]]
_ROUTER_FIELDS = frozenset((*ROUTER_VARS, ROUTER_DATA))


@contextlib.asynccontextmanager
async def shared_change(app: Any, token: str, state_cls: type[rx.State]) -> AsyncIterator[Any]:
    """Lock ``state_cls`` of the shared ``token``, yield it, then send what changed in it.

    The update is sent while the lock is held, so two changes of one shared state reach every
    tab in the order they were made. Must not be entered from inside an event handler (the
    state manager's lock is not re-entrant), like ``app.modify_state``.
    """
    with app.set_contexts():
        async with app.state_manager.modify_state(
            rx.BaseStateToken(ident=token, cls=state_cls)
        ) as root:
            yield await root.get_state(state_cls)
            delta = await root._get_resolved_delta()
            root._clean()
            for update, tabs in linked_updates(root, delta):
                await send(app, update, tabs)


def linked_updates(root: Any, delta: Delta) -> Iterator[tuple[StateUpdate, set[str]]]:
    """Each changed shared state's part of ``delta``, with the tabs linked to that state.

    Also forgets the change as Reflex's "previous dirty vars" of the state (``_clean()`` just
    recorded it), so a later event of a linked tab does not fan it out a second time.
    """
    for shared in _shared_states(root):
        previous = shared._previous_dirty_vars
        if previous:
            previous.clear()
        name = shared.get_full_name()
        entry = delta.get(name)
        if entry and shared._linked_from:
            yield StateUpdate(delta={name: entry}), set(shared._linked_from)


def _shared_states(root: Any) -> Iterator[Any]:
    base = root.substates.get(SharedStateBaseInternal.get_name())
    pending = list(base.substates.values()) if base is not None else []
    while pending:
        state = pending.pop()
        if isinstance(state, SharedState):
            yield state
        pending.extend(state.substates.values())


async def send(app: Any, update: StateUpdate, tabs: set[str]) -> None:
    """``update`` to each connected tab of ``tabs``, encoded once for this worker's sockets."""
    namespace = app.event_namespace
    if namespace is None:
        return
    manager = namespace._token_manager
    here: list[str] = []
    elsewhere: list[str] = []
    for tab in tabs:
        record = manager.token_to_socket.get(tab)
        if record is not None and record.instance_id == manager.instance_id:
            here.append(record.sid)
        elif isinstance(manager, RedisTokenManager):
            elsewhere.append(tab)
        # else: no socket (closed tab); Reflex's own fan-out skips these too.
    if here:
        # A list of sids: python-socketio encodes the packet once and queues it to each.
        await namespace.emit(str(SocketEvent.EVENT), update, to=here)
    if elsewhere:
        # One or two Redis round trips per tab: concurrently, not one after the other.
        await asyncio.gather(*(_relay(manager, tab, update) for tab in elsewhere))
    # Let the websocket writers flush before the caller goes on (as Reflex's emit_update).
    await asyncio.sleep(0)


async def _relay(manager: RedisTokenManager, tab: str, update: StateUpdate) -> None:
    """Hand ``update`` to the worker serving ``tab`` (Reflex's lost-and-found channel)."""
    if await manager.is_token_connected(tab):
        await manager.emit_lost_and_found(tab, update)


def lean_fan_out(app: Any) -> None:
    """Leave the router vars out of the deltas Reflex fans out for a tab's own shared change.

    (The bridge's writes do not take this path: :func:`shared_change` sends them once.)
    When a tab's event changes a shared state, Reflex applies the change to each other linked
    tab with ``app.modify_state(token, previous_dirty_vars=...)``. Patching the shared state
    into the tab's tree marks the tab's router vars dirty (``reflex.istate.shared._patch_state``,
    to refresh computed vars), so every fanned-out frame re-sent ~1.1 KB of router data the
    tab already has (76 % of a streamed frame). A fan-out never navigates the receiving tab:
    its router values are unchanged, so they are un-marked before Reflex builds the delta.
    Events a tab sends itself, navigation and hydration are untouched (no
    ``previous_dirty_vars``).
    """
    original = app.modify_state

    @contextlib.asynccontextmanager
    async def modify_state(token: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        fanned_out = kwargs.get("previous_dirty_vars")
        if fanned_out is not None and not any(fanned_out.values()):
            yield None  # the event changed no shared var: nothing to send (was a 65 B frame)
            return
        async with original(token, *args, **kwargs) as root:
            yield root
            if fanned_out is not None:
                root.dirty_vars.difference_update(_ROUTER_FIELDS)

    app.modify_state = modify_state


class ForgetEarlierSharedChanges(Middleware):
    """Fan out only what *this* event changed in a shared state.

    After each event Reflex sends every other linked tab the shared states' "previous dirty
    vars", which only a state's ``_clean()`` resets, and ``_clean()`` skips states the event
    did not change. So after a tab linked a shared state (every var dirty), each later event
    of that tab (a keystroke in the rename box, a menu click) re-sent the whole chat list and
    the whole transcript view to every other tab of the user (measured: 4.9 KB per event per
    tab). Cleared before each event, they hold just what the event changes.
    """

    async def preprocess(self, app: Any, state: Any, event: Any) -> None:
        links = getattr(state, "_reflex_internal_links", None) or {}
        for name in links:
            with contextlib.suppress(ValueError):
                linked = state._get_state_from_cache(state.get_class_substate(name))
                previous = getattr(linked, "_previous_dirty_vars", None)
                if previous:
                    previous.clear()
        return None
