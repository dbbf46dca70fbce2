"""Signs tabs out live: when a session ends elsewhere, the tabs that used it stop showing data.

Every event already re-checks who is asking (:mod:`chatsapp.auth.guard`), but an idle tab sends
no event: after "sign out" in one tab, "sign out everywhere", a password change or an admin
disabling the account, its sidebar and open chat would stay on screen. So each worker keeps
the tabs it served (client token → viewer, bounded) and polls the accounts change feed
(:meth:`backend.accounts.Accounts.changes_since`, one indexed read) every
:data:`POLL_INTERVAL_S`. For each user named there, it re-resolves their tabs' sessions and marks
the tabs whose session ended as signed out (``AccountTabState.signed_out``): the page hides
everything and offers the sign-in page. With Redis, each worker handles the tabs it served.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

import reflex as rx

from chatsapp.auth.identity import Viewer
from chatsapp.reflex_seam import ReflexApp
from chatsapp.services import offload, services

logger = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
MAX_TRACKED_TABS = 20_000  # the oldest are forgotten first; their next event re-checks anyway

_tabs: OrderedDict[str, Viewer] = OrderedDict()
_app: ReflexApp | None = None
_signed_out_state: type[rx.State] | None = None
_task: asyncio.Task[None] | None = None


def install(app: ReflexApp, signed_out_state: type[rx.State]) -> None:
    """Called once by the app module: where to write the signed-out flag."""
    global _app, _signed_out_state
    _app, _signed_out_state = app, signed_out_state


def seen(client_token: str, viewer: Viewer) -> None:
    """A tab just sent an event as ``viewer`` (called by the guard; cheap)."""
    if not viewer.session_token:
        return  # header / none mode: no session to end
    _tabs[client_token] = viewer
    _tabs.move_to_end(client_token)
    while len(_tabs) > MAX_TRACKED_TABS:
        _tabs.popitem(last=False)
    _ensure_polling()


def _ensure_polling() -> None:
    global _task
    if _task is None or _task.done():
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to watch yet
            _task = asyncio.get_running_loop().create_task(_poll())


async def _poll() -> None:
    accounts = services().accounts()
    cursor = await offload(accounts.change_cursor)
    while _tabs:
        await asyncio.sleep(POLL_INTERVAL_S)
        try:
            changes = await offload(accounts.changes_since, cursor)
            cursor = changes.cursor
            if changes.gap:
                await _recheck(list(_tabs))
            elif changes.changes:
                users = set(changes.user_ids)
                await _recheck([t for t, v in list(_tabs.items()) if v.user_id in users])
        except Exception:  # the next poll tries again; events re-check on their own anyway
            logger.warning("account change poll failed", exc_info=True)


async def _recheck(client_tokens: list[str]) -> None:
    accounts = services().accounts()
    for client_token in client_tokens:
        viewer = _tabs.get(client_token)
        if viewer is None:
            continue
        user = await offload(accounts.resolve, viewer.session_token)
        if user is not None and user.id == viewer.user_id:
            continue
        _tabs.pop(client_token, None)
        await _sign_out_tab(client_token)


async def _sign_out_tab(client_token: str) -> None:
    if _app is None or _signed_out_state is None:
        return
    token = rx.BaseStateToken(ident=client_token, cls=_signed_out_state)
    async with _app.modify_state(token) as root:
        state = await root.get_state(_signed_out_state)
        state.signed_out = True
