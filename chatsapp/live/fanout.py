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

from chatsapp.reflex_seam import (
    BaseState,
    Delta,
    Event,
    Middleware,
    ReflexApp,
    StateUpdate,
    forget_fanned_out_changes,
    linked_states_of,
    linked_tabs,
    modify_shared,
    resolved_delta,
    send_update,
    shared_states_of,
    skip_router_vars_in_fan_out,
)


@contextlib.asynccontextmanager
async def shared_change(
    app: ReflexApp, token: str, state_cls: type[BaseState]
) -> AsyncIterator[Any]:
    """Lock ``state_cls`` of the shared ``token``, yield it, then send what changed in it.

    The update is sent while the lock is held, so two changes of one shared state reach every
    tab in the order they were made. Must not be entered from inside an event handler (the
    state manager's lock is not re-entrant), like ``app.modify_state``.
    """
    async with modify_shared(app, token, state_cls) as root:
        yield await root.get_state(state_cls)
        delta = await resolved_delta(root)
        for update, tabs in linked_updates(root, delta):
            await send(app, update, tabs)


def linked_updates(root: BaseState, delta: Delta) -> Iterator[tuple[StateUpdate, set[str]]]:
    """Each changed shared state's part of ``delta``, with the tabs linked to that state.

    Also forgets the change as Reflex's "previous dirty vars" of the state (cleaning the root
    just recorded it), so a later event of a linked tab does not fan it out a second time.
    """
    for shared in shared_states_of(root):
        forget_fanned_out_changes(shared)
        name = shared.get_full_name()
        entry = delta.get(name)
        tabs = linked_tabs(shared)
        if entry and tabs:
            yield StateUpdate(delta={name: entry}), tabs


async def send(app: ReflexApp, update: StateUpdate, tabs: set[str]) -> None:
    """``update`` to each connected tab of ``tabs``, encoded once for this worker's sockets."""
    await send_update(app, update, tabs)
    # Let the websocket writers flush before the caller goes on (as Reflex's emit_update).
    await asyncio.sleep(0)


def lean_fan_out(app: ReflexApp) -> None:
    """Leave the router vars out of the deltas Reflex fans out for a tab's own shared change.

    (The bridge's writes do not take this path: :func:`shared_change` sends them once.)
    When a tab's event changes a shared state, Reflex applies the change to each other linked
    tab, and patching the shared state into the tab's tree marks the tab's router vars dirty
    (to refresh computed vars), so every fanned-out frame re-sent ~1.1 KB of router data the
    tab already has (76 % of a streamed frame). A fan-out never navigates the receiving tab:
    its router values are unchanged, so they are un-marked before Reflex builds the delta.
    Events a tab sends itself, navigation and hydration are untouched.
    """
    skip_router_vars_in_fan_out(app)


class ForgetEarlierSharedChanges(Middleware):
    """Fan out only what *this* event changed in a shared state.

    After each event Reflex sends every other linked tab the shared states' "previous dirty
    vars", which only a state's ``_clean()`` resets, and ``_clean()`` skips states the event
    did not change. So after a tab linked a shared state (every var dirty), each later event
    of that tab (a keystroke in the rename box, a menu click) re-sent the whole chat list and
    the whole transcript view to every other tab of the user (measured: 4.9 KB per event per
    tab). Cleared before each event, they hold just what the event changes.
    """

    async def preprocess(
        self, app: ReflexApp, state: BaseState, event: Event
    ) -> StateUpdate | None:
        for linked in linked_states_of(state):
            forget_fanned_out_changes(linked)
        return None
