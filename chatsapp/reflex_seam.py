"""Every use of a Reflex internal, one function each: what a Reflex upgrade must re-check.

The app leans on parts of Reflex 0.10 that are not its documented API: private attributes of
states, the socket namespace's hooks and token manager, the production backend starter, the
name of the event processor's logger. They live here and nowhere else
(``tests/test_layering.py`` pins it), and ``tests/ui/test_reflex_seam.py`` holds one contract
test per function, run against the installed Reflex: a Reflex that renames or changes one of
them fails there, not in production.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableSet
from typing import Any, Protocol, TypeVar

import reflex as rx
from reflex.app import EventNamespace
from reflex.istate.manager import StateManager
from reflex.istate.manager.memory import StateManagerMemory
from reflex.istate.manager.redis import StateManagerRedis
from reflex.istate.shared import SharedState, SharedStateBaseInternal
from reflex.middleware.middleware import Middleware
from reflex.state import BaseState, StateUpdate
from reflex.utils.token_manager import RedisTokenManager
from reflex_base.constants import RouteVar, SocketEvent
from reflex_base.constants.route import ROUTER_DATA, ROUTER_VARS
from reflex_base.constants.state import FIELD_MARKER
from reflex_base.event import Event, EventSpec
from reflex_base.vars import VarData
from reflex_components_core.core.banner import (
    connection_error,
    connection_toaster,
    has_connection_errors,
)

__all__ = [
    "EVENT_LOGGER",
    "UPLOAD_HANDLER_HEADER",
    "UPLOAD_TOKEN_HEADER",
    "BaseState",
    "Delta",
    "Environ",
    "Event",
    "EventSpec",
    "Middleware",
    "ReflexApp",
    "StateUpdate",
    "connection_error",
    "connection_toaster",
    "emit_to_socket",
    "event_logger",
    "events_update",
    "existing_tab_state",
    "forget_fanned_out_changes",
    "handshake_of",
    "has_connection_errors",
    "hear_connects",
    "hear_disconnects",
    "install_backend_starter",
    "link_to",
    "linked_states_of",
    "linked_tabs",
    "linked_token",
    "modify_shared",
    "production_app_factory",
    "quiet_fanned_out_changes",
    "rebuild_router_vars",
    "release_link_locks_of_a_cancelled_event",
    "replace_connection_overlay",
    "resolved_delta",
    "run_reflex_cli",
    "send_here",
    "send_update",
    "serve_frontend_from_backend",
    "shared_states_of",
    "skip_router_vars_in_fan_out",
    "upload_path",
    "var_data_of",
    "vars_update",
]

Delta = dict[str, dict[str, Any]]
Environ = dict[str, Any]  # a socket's connect environ (ASGI scope, query string)
S = TypeVar("S", bound=BaseState)


class ReflexApp(Protocol):
    """The app object as this app uses it (``rx.App``; the tests' stand-ins have the same)."""

    @property
    def event_namespace(self) -> EventNamespace | None: ...  # None until the app is served

    @property
    def state_manager(self) -> StateManager: ...

    def set_contexts(self) -> contextlib.AbstractContextManager[object]: ...

    def add_middleware(self, middleware: Middleware, index: int | None = None) -> None: ...

    def modify_state(
        self, token: rx.BaseStateToken
    ) -> contextlib.AbstractAsyncContextManager[BaseState]: ...


# ── logging ─────────────────────────────────────────────────────────

EVENT_LOGGER = "reflex_base.event.processor.event_processor"
"""The logger Reflex's event processor writes a failed event to, its router data included."""


def event_logger() -> logging.Logger:
    """The logger that receives an unroutable event's ``router_data`` (cookies included)."""
    return logging.getLogger(EVENT_LOGGER)


# ── components ──────────────────────────────────────────────────────


def var_data_of(var: rx.Var) -> VarData | None:
    """The imports and hooks ``var`` needs, to carry into a var built from its JavaScript."""
    return var._get_all_var_data()


# ── the state tree ──────────────────────────────────────────────────


@contextlib.asynccontextmanager
async def modify_shared(
    app: ReflexApp, token: str, state_cls: type[BaseState]
) -> AsyncIterator[BaseState]:
    """The root state of ``token`` locked in the app's state manager, out of any event."""
    with app.set_contexts():
        async with app.state_manager.modify_state(
            rx.BaseStateToken(ident=token, cls=state_cls)
        ) as root:
            yield root


async def resolved_delta(root: BaseState) -> Delta:
    """What changed under ``root`` (computed vars resolved), then ``root`` marked clean.

    Cleaning records each changed shared state's dirty vars as its "previous dirty vars";
    :func:`forget_fanned_out_changes` clears them.
    """
    delta: Delta = await root._get_resolved_delta()
    root._clean()
    return delta


def shared_states_of(root: BaseState) -> Iterator[SharedState]:
    """Every shared state in the tree of ``root`` (they hang under Reflex's internal base)."""
    base = root.substates.get(SharedStateBaseInternal.get_name())
    pending = list(base.substates.values()) if base is not None else []
    while pending:
        state = pending.pop()
        if isinstance(state, SharedState):
            yield state
        pending.extend(state.substates.values())


def linked_tabs(shared: BaseState) -> set[str]:
    """The client tokens of the tabs linked to ``shared`` (Reflex's ``_linked_from``)."""
    return set(getattr(shared, "_linked_from", None) or ())


def forget_fanned_out_changes(state: BaseState) -> None:
    """Clear what Reflex would fan out of ``state`` after the next event (``_clean`` wrote it)."""
    previous = getattr(state, "_previous_dirty_vars", None)
    if previous:
        previous.clear()


def quiet_fanned_out_changes(state: BaseState, replacement: MutableSet[str]) -> None:
    """Let ``replacement`` receive what ``_clean`` records to fan out of ``state``."""
    if getattr(state, "_previous_dirty_vars", None) is not None:
        object.__setattr__(state, "_previous_dirty_vars", replacement)


async def link_to(state: BaseState, token: str) -> SharedState:
    """Link the tab of ``state`` (a shared state) to the shared ``token``; the linked state."""
    return await state._link_to(token)  # type: ignore[attr-defined]


def linked_token(state: BaseState) -> str:
    """The shared token ``state`` (as the tab's event sees it) is linked to; "" if none."""
    return str(getattr(state, "_linked_to", "") or "")


# The tab whose event is locking its linked shared tokens, while Reflex locks them.
_LOCKING_LINKS: contextvars.ContextVar[SharedStateBaseInternal | None] = contextvars.ContextVar(
    "chats_locking_links", default=None
)


def release_link_locks_of_a_cancelled_event() -> None:
    """Let an event stopped while it locks its tab's shared tokens release those it holds.

    Before a tab's event runs, Reflex 0.10.1 locks each shared token the tab is linked to, one
    after the other, on an exit stack it only enters once all are locked. An event cancelled
    while it waited for the second (a navigation cancels a page's unfinished on_load events; a
    closed tab cancels them too) left the first locked for good: every later event of every
    tab linked to it waited forever (all of a person's new tabs stayed on the sidebar's
    skeleton). Now the locks taken so far are released before the cancel goes on. Idempotent.
    """
    cls: Any = SharedStateBaseInternal
    if getattr(cls._modify_linked_states, "_chats_releases", False):
        return
    lock_all = cls._modify_linked_states
    lock_one = cls._internal_patch_linked_state

    def modify_linked_states(self: Any, previous_dirty_vars: Any = None) -> _LockingLinks:
        return _LockingLinks(lock_all(self, previous_dirty_vars), self._linked_locks_holder())

    async def internal_patch_linked_state(self: Any, token: str, full_delta: bool = False) -> Any:
        try:
            return await lock_one(self, token, full_delta)
        except BaseException:
            holder: SharedStateBaseInternal = self._linked_locks_holder()
            if _LOCKING_LINKS.get() is holder and holder._exit_stack is not None:
                await holder._exit_stack.aclose()  # the locks (and patches) taken so far
            raise

    modify_linked_states._chats_releases = True  # type: ignore[attr-defined]
    cls._modify_linked_states = modify_linked_states
    cls._internal_patch_linked_state = internal_patch_linked_state


class _LockingLinks:
    """Reflex's context that locks a tab's linked tokens, marking the tab while it locks."""

    def __init__(
        self,
        links: contextlib.AbstractAsyncContextManager[None],
        holder: SharedStateBaseInternal,
    ) -> None:
        self.links = links
        self.holder = holder

    async def __aenter__(self) -> None:
        mark = _LOCKING_LINKS.set(self.holder)
        try:
            await self.links.__aenter__()
        finally:
            _LOCKING_LINKS.reset(mark)

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        return await self.links.__aexit__(*exc_info)


def linked_states_of(state: BaseState) -> Iterator[BaseState]:
    """The shared states the tab of ``state`` is linked to, as its tree holds them now."""
    links = getattr(state, "_reflex_internal_links", None) or {}
    for name in links:
        with contextlib.suppress(ValueError):
            yield state._get_state_from_cache(state.get_class_substate(name))


def rebuild_router_vars(state: BaseState, router_data: dict[str, object]) -> None:
    """Rebuild the router vars of ``state`` from ``router_data`` (as Reflex does per event)."""
    state.router_data = state._update_router_vars(router_data, state.router_data)


def events_update(spec: EventSpec) -> StateUpdate:
    """An update that runs ``spec`` (a redirect, a script) in the tab it answers."""
    return StateUpdate(events=Event.from_event_type([spec]))


async def existing_tab_state(app: ReflexApp, token: str, cls: type[S]) -> S | None:
    """``cls`` of ``token``'s tab, or None when the in-memory manager holds no tree for it
    (reading would create a whole tab state, only to be thrown away). Redis cannot tell
    without a read: there, the state is read (an empty one if it expired)."""
    manager = app.state_manager
    state_token = rx.BaseStateToken(ident=token, cls=cls)
    if isinstance(manager, StateManagerMemory) and state_token.cache_key not in manager.states:
        return None
    with app.set_contexts():
        root = await manager.get_state(state_token)
        return await root.get_state(cls)


def redis_of(app: ReflexApp) -> Any:
    """The Redis client of the app's state manager (``redis.asyncio.Redis``), or None when
    tab states live in this process's memory (one worker, nothing to tell the others)."""
    manager = app.state_manager
    return manager.redis if isinstance(manager, StateManagerRedis) else None


# ── fan-out ─────────────────────────────────────────────────────────

ROUTER_FIELDS = frozenset((*ROUTER_VARS, ROUTER_DATA))


async def send_update(app: ReflexApp, update: StateUpdate, tabs: set[str]) -> None:
    """``update`` to each connected tab of ``tabs``, encoded once for this worker's sockets;
    tabs served by another worker get it through Reflex's lost-and-found channel (Redis)."""
    namespace = app.event_namespace
    if namespace is None:
        return
    manager = namespace._token_manager
    await _emit_here(namespace, update, _sids_here(namespace, tabs))
    if isinstance(manager, RedisTokenManager):
        elsewhere = [tab for tab in tabs if not _served_here(namespace, tab)]
        # else: no socket (closed tab); Reflex's own fan-out skips these too.
        if elsewhere:
            # One Redis round trip per tab (the owner's record is cached, kept current by
            # Reflex's keyspace subscription): concurrently, not one after the other.
            await asyncio.gather(*(manager.emit_lost_and_found(tab, update) for tab in elsewhere))


async def send_here(app: ReflexApp, update: StateUpdate, tabs: set[str]) -> None:
    """``update`` to each tab of ``tabs`` whose socket this worker serves (the others: none)."""
    namespace = app.event_namespace
    if namespace is not None:
        await _emit_here(namespace, update, _sids_here(namespace, tabs))


def vars_update(state_cls: type[BaseState], values: dict[str, Any]) -> StateUpdate:
    """An update setting ``values`` (var name -> value) of ``state_cls`` in a tab, as a delta
    of that state would."""
    fields = {name + FIELD_MARKER: value for name, value in values.items()}
    return StateUpdate(delta={state_cls.get_full_name(): fields})


def _served_here(namespace: EventNamespace, tab: str) -> bool:
    manager = namespace._token_manager
    record = manager.token_to_socket.get(tab)
    return record is not None and record.instance_id == manager.instance_id


def _sids_here(namespace: EventNamespace, tabs: set[str]) -> list[str]:
    records = namespace._token_manager.token_to_socket
    return [records[tab].sid for tab in tabs if _served_here(namespace, tab)]


async def _emit_here(namespace: EventNamespace, update: StateUpdate, sids: list[str]) -> None:
    if sids:
        # A list of sids: python-socketio encodes the packet once and queues it to each.
        await namespace.emit(str(SocketEvent.EVENT), update, to=sids)


def skip_router_vars_in_fan_out(app: ReflexApp) -> None:
    """Leave the router vars out of what Reflex fans out of a tab's change to a shared state.

    Reflex applies such a change to each other linked tab with
    ``app.modify_state(token, previous_dirty_vars=...)``, and patching the shared state into
    the tab's tree marks the tab's router vars dirty. A fan-out never navigates: they are
    un-marked before the delta is built; one that changed nothing is skipped.
    """
    target: Any = app
    original = target.modify_state

    @contextlib.asynccontextmanager
    async def modify_state(token: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        fanned_out = kwargs.get("previous_dirty_vars")
        if fanned_out is not None and not any(fanned_out.values()):
            yield None  # the event changed no shared var: nothing to send (was a 65 B frame)
            return
        async with original(token, *args, **kwargs) as root:
            yield root
            if fanned_out is not None:
                root.dirty_vars.difference_update(ROUTER_FIELDS)

    target.modify_state = modify_state


# ── sockets ─────────────────────────────────────────────────────────

ConnectHook = Callable[[str, Environ], Awaitable[Environ]]


def hear_connects(app: ReflexApp, before: ConnectHook) -> None:
    """Run ``before(sid, environ)`` ahead of Reflex's own socket connect; Reflex connects
    with the environ it returns (a hook may swap the token the socket asks for)."""
    namespace = app.event_namespace
    if namespace is None:
        return
    original = namespace.on_connect

    async def on_connect(sid: str, environ: Environ, auth: object = None) -> object:
        return await original(sid, await before(sid, environ), auth)

    setattr(namespace, "on_connect", on_connect)  # noqa: B010  (mypy forbids assigning a method)


def hear_disconnects(app: ReflexApp, after: Callable[[str], None]) -> None:
    """Run ``after(client_token)`` once Reflex has handled a socket's disconnect."""
    namespace = app.event_namespace
    if namespace is None:
        return
    original = namespace.on_disconnect

    def on_disconnect(sid: str) -> object:
        token = namespace.sid_to_token.get(sid)
        result = original(sid)
        if token:
            after(token)
        return result

    setattr(namespace, "on_disconnect", on_disconnect)  # noqa: B010


async def emit_to_socket(app: ReflexApp, event: str, value: str, sid: str) -> None:
    """Send the socket event ``event`` to one socket."""
    await _namespace(app).emit(event, value, to=sid)


def handshake_of(app: ReflexApp, sid: str, environ: Environ) -> tuple[dict[str, str], str]:
    """The headers and peer address a socket's events will carry, from its connect environ."""
    static = _namespace(app)._build_static_router_data(sid, environ)
    return dict(static[RouteVar.HEADERS]), str(static[RouteVar.CLIENT_IP])


def _namespace(app: ReflexApp) -> EventNamespace:
    namespace = app.event_namespace
    if namespace is None:
        raise RuntimeError("the app has no socket namespace: it is not being served")
    return namespace


# ── hosting ─────────────────────────────────────────────────────────


def production_app_factory() -> str:
    """What uvicorn imports the app from, as Reflex's own production server does."""
    from reflex.utils.exec import get_app_instance

    return get_app_instance()


def serve_frontend_from_backend(mount: bool) -> None:
    """Whether the backend also serves the built frontend (Reflex's build flag)."""
    from reflex_base.environment import environment

    environment.REFLEX_MOUNT_FRONTEND_COMPILED_APP.set(mount)


def built_pages_environment() -> dict[str, str]:
    """The environment of a backend process serving pages built before it started: Reflex's
    production run sets it before starting the backend (its name is Reflex's internal one,
    ``__REFLEX_SKIP_COMPILE``). Without it the process compiles every page again into the
    build it serves and reinstalls the frontend packages in the project folder."""
    from reflex_base.environment import environment

    return {environment.REFLEX_SKIP_COMPILE.name: "true"}


def install_backend_starter(starter: Callable[..., None]) -> None:
    """Reflex's run command, in this process, starts the production backend with ``starter``.

    It looks its starter up on ``reflex.utils.exec`` when it calls it, so replacing it there
    is enough.
    """
    from reflex.utils import exec as reflex_exec

    reflex_exec.run_backend_prod = starter


def run_reflex_cli(args: list[str], prog_name: str) -> None:
    """Reflex's own command line (``reflex run …``) in this process."""
    from reflex.reflex import cli

    cli.main(args=args, prog_name=prog_name)


OVERLAY_WRAP = (5, "Overlay")
"""Where an app keeps what every page shows over itself (Reflex's connection overlay)."""


def replace_connection_overlay(app: rx.App, overlay: Callable[[], rx.Component]) -> None:
    """Every page shows ``overlay`` instead of Reflex's connection overlay (an icon pulsing
    for as long as the server is away, and a toast). It is one of the app's wraps, which
    take the page as their children: a fragment holds both."""
    app.app_wraps[OVERLAY_WRAP] = lambda stateful: rx.fragment(overlay()) if stateful else None


# The headers Reflex's upload route reads to name the tab and the handler of an upload.
UPLOAD_TOKEN_HEADER = "reflex-client-token"
UPLOAD_HANDLER_HEADER = "reflex-event-handler"


def upload_path() -> str:
    """Where Reflex serves uploads (``/_upload`` under the configured backend path)."""
    from reflex.config import get_config
    from reflex_base import constants

    return get_config().prepend_backend_path(str(constants.Endpoint.UPLOAD))
