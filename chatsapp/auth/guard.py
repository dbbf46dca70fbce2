"""The one place where every event of every tab is checked against who is asking.

A Reflex middleware runs before each event, with the tab's state locked and the connection's
server-side router data in place. It

1. resolves the viewer from the connection (:func:`chatsapp.auth.identity.identify`: the HttpOnly
   session cookie, the trusted proxy's header, or the local user) and publishes it for this
   event only — a demoted, disabled or signed-out person loses access at their next event;
2. binds the tab to the first person it served. A tab's state (its open chat, its links to
   ``user-…`` and ``conv-…`` shared states) belongs to that person: if a different person (or
   nobody) later sends an event with the same client token — a sign-out then someone else's
   sign-in in one browser tab, or a hostile client replaying a token it learned — the event
   is refused before anything is read, and the tab is told to start over with a fresh token
   (a socket that *connects* with such a token is refused at once:
   :mod:`chatsapp.auth.token_binding`). When nobody asks — the tab's own session ended while
   its socket was open, and this event came before the live sign-out's poll — the event is
   refused and the tab shows the signed-out notice, as the poll would have made it (before,
   it started over on the sign-in page with no word of why); the notice's "Sign in again" is
   a new page load, whose connect gets a fresh token;
3. refuses events that need a signed-in person when there is none, sending the tab to the
   sign-in page (or the first-run page of a fresh install). Public events: the auth pages'
   own handlers and Reflex's page-load plumbing;
4. refuses client tokens that are not what a browser makes (a UUID). Shared states live under
   tokens such as ``user-<id>``: a client connecting with such a token would otherwise be
   served the shared state's tree as if it were its own tab (refused at connect too);
5. refuses ``setvar`` (Reflex's generic "set any var" event): no control of this app uses it,
   so a crafted one can only be an attempt to write state a handler would have checked;
6. makes every string of the payload and of the page address well-formed Unicode
   (``backend.storage``'s text rule: a lone UTF-16 surrogate becomes U+FFFD). A ``"\\ud800"``
   escape decodes to a string UTF-8 cannot carry: once it was in the tab's state (a handler
   kept it, or the router vars built from the path), every later frame to that tab failed to
   encode and the tab hung with no word said.

Handlers a client may name at all are only those declared with ``@rx.event``
(:mod:`chatsapp.states.server_only`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import reflex as rx

from backend.storage import well_formed_text
from chatsapp.auth.identity import identify, is_browser_token, may_use_tab, publish_viewer
from chatsapp.auth.signout_watch import SignoutWatch
from chatsapp.chat_route import chat_id_of_path
from chatsapp.reflex_seam import (
    BaseState,
    Event,
    EventSpec,
    Middleware,
    ReflexApp,
    StateUpdate,
    events_update,
    rebuild_router_vars,
)
from chatsapp.services import offload, services

# Reflex's own events that a page load sends before any of ours (hydration, on_load fan-out,
# client storage sync): they only read the tab's own state back, which the owner check covers.
_PLUMBING = (
    "hydrate",
    "hydrate_and_load",
    "on_load_internal",
    "set_is_hydrated",
    "update_vars_internal",
)
_FORBIDDEN = ("setvar",)
# A new client token on reload: the old tab state (someone else's) is never loaded again.
_START_OVER = "window.sessionStorage.removeItem('token'); window.location.reload();"


class OwnerTabState(rx.State):
    """Per tab, backend only: the person this tab's state belongs to ("" = nobody yet)."""

    _owner: str = ""


class AuthGuard(Middleware):
    """See the module docstring. ``public_states`` name the states anyone may use; ``signout``
    hears of every signed-in event (so it can sign the tab out live)."""

    def __init__(self, public_states: tuple[type[BaseState], ...], signout: SignoutWatch) -> None:
        self._public = frozenset(state.get_full_name() for state in public_states)
        self._signout = signout

    async def preprocess(
        self, app: ReflexApp, state: BaseState, event: Event
    ) -> StateUpdate | None:
        handler_state, _, handler = event.name.rpartition(".")
        router = state.router
        if not is_browser_token(router.session.client_token):
            return _update(state, rx.call_script(_START_OVER))
        if handler in _FORBIDDEN:
            return StateUpdate()
        if isinstance(event.payload, dict):
            event.payload.update({k: _well_formed(v) for k, v in event.payload.items()})
        _well_formed_router(state)
        headers: dict[str, str] = dict(state.router_data.get("headers") or {})
        viewer = await offload(identify, headers, router.session.client_ip)
        publish_viewer(viewer)
        owner_state = await state.get_state(OwnerTabState)
        assert isinstance(owner_state, OwnerTabState)
        viewer_id = viewer.user_id if viewer is not None else ""
        if not may_use_tab(owner_state._owner, viewer_id):
            if viewer is None:
                # Nobody asking for a bound tab: its session ended while its socket was open.
                await self._signout.tell_ended(state, router.session.client_token)
                return StateUpdate()
            return _update(state, rx.call_script(_START_OVER))
        if viewer is not None:
            owner_state._owner = viewer_id
            self._signout.seen(router.session.client_token, viewer)
            return None
        if handler in _PLUMBING or handler_state in self._public:
            return None
        return _update(state, rx.redirect(await _entry_page(router.url.path)))


async def _entry_page(current: str) -> str:
    """Where a signed-out tab goes: the first-run form of a fresh local install, else sign-in
    (in ``header`` mode the sign-in page explains that the proxy signs people in)."""
    if services().settings.auth_mode == "local" and await offload(
        services().accounts().needs_setup
    ):
        return "/setup"
    if chat_id_of_path(current):
        return "/sign-in?" + urlencode({"next": current})
    return "/sign-in"


def _well_formed(value: Any) -> Any:
    """``value`` with every string in it well-formed (nested lists and dicts too)."""
    if isinstance(value, str):
        return well_formed_text(value)
    if isinstance(value, list):
        return [_well_formed(v) for v in value]
    if isinstance(value, dict):
        return {_well_formed(k): _well_formed(v) for k, v in value.items()}
    return value


def _well_formed_router(state: BaseState) -> None:
    """The page address is the client's too, and Reflex built the router vars (sent back to
    the tab) from it before any middleware runs: rebuild them from well-formed text."""
    sent = state.router_data
    cleaned = _well_formed(sent)
    if cleaned != sent:
        rebuild_router_vars(state, cleaned)


def _update(state: BaseState, spec: EventSpec) -> StateUpdate:
    return events_update(spec)
