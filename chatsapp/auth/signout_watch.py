"""Signs tabs out live: when a session ends elsewhere, the tabs that used it stop showing data.

Every event already re-checks who is asking (:mod:`chatsapp.auth.guard`), but an idle tab sends
no event: after "sign out" in one tab, "sign out everywhere", a password change or an admin
disabling the account, its sidebar and open chat would stay on screen. So each worker keeps
the tabs it served (client token → viewer, bounded) and polls the accounts change feed
(:meth:`backend.accounts.Accounts.changes_since`, one indexed read) every
:data:`POLL_INTERVAL_S`. For each user named there, it re-resolves their tabs' sessions and marks
the tabs whose session ended as signed out (``AccountTabState.signed_out``): the page hides
everything and offers the sign-in page. With Redis, each worker handles the tabs it served.
A tab whose own event finds its session gone before a poll did is told the same way, by the
guard (:meth:`SignoutWatch.tell_ended`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

import reflex as rx

from chatsapp.auth.identity import Viewer
from chatsapp.reflex_seam import BaseState, ReflexApp
from chatsapp.services import offload, services

logger = logging.getLogger(__name__)

POLL_INTERVAL_S = 1.0
MAX_TRACKED_TABS = 20_000  # the oldest are forgotten first; their next event re-checks anyway


class SignoutWatch:
    """The tabs one worker served, signed out live when their session ends (module docstring).

    Built once by the app module, with the app and the per-tab state holding ``signed_out``;
    the guard tells it of every event (:meth:`seen`).
    """

    def __init__(self, app: ReflexApp, signed_out_state: type[rx.State]) -> None:
        self.app = app
        self.signed_out_state = signed_out_state
        self.poll_interval_s = POLL_INTERVAL_S
        self._tabs: OrderedDict[str, Viewer] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._telling: set[asyncio.Task[None]] = set()  # tell_ended's, kept until done

    def seen(self, client_token: str, viewer: Viewer) -> None:
        """A tab just sent an event as ``viewer`` (called by the guard; cheap)."""
        if not viewer.session_token:
            return  # header / none mode: no session to end
        self._tabs[client_token] = viewer
        self._tabs.move_to_end(client_token)
        while len(self._tabs) > MAX_TRACKED_TABS:
            self._tabs.popitem(last=False)
        self._ensure_polling()

    async def tell_ended(self, tab: BaseState, client_token: str) -> None:
        """The guard found an event of ``tab`` (locked, bound to a person) asked by nobody:
        the session its socket connected with ended while it was open (connects are checked:
        :mod:`chatsapp.auth.token_binding`), before a poll noticed. Sign the tab out as a poll
        would, once; the mark is set when the refused event has let go of the tab's lock."""
        told = await tab.get_state(self.signed_out_state)
        if getattr(told, "signed_out", False):
            return
        self._tabs.pop(client_token, None)
        task = asyncio.get_running_loop().create_task(self._sign_out_tab(client_token))
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    def _ensure_polling(self) -> None:
        if self._task is None or self._task.done():
            with contextlib.suppress(RuntimeError):  # no running loop: nothing to watch yet
                self._task = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        accounts = services().accounts()
        cursor = await offload(accounts.change_cursor)
        while self._tabs:
            await asyncio.sleep(self.poll_interval_s)
            try:
                changes = await offload(accounts.changes_since, cursor)
                cursor = changes.cursor
                if changes.gap:
                    await self._recheck(list(self._tabs))
                elif changes.changes:
                    users = set(changes.user_ids)
                    tabs = list(self._tabs.items())
                    await self._recheck([t for t, v in tabs if v.user_id in users])
            except Exception:  # the next poll tries again; events re-check on their own anyway
                logger.warning("account change poll failed", exc_info=True)

    async def _recheck(self, client_tokens: list[str]) -> None:
        accounts = services().accounts()
        for client_token in client_tokens:
            viewer = self._tabs.get(client_token)
            if viewer is None:
                continue
            user = await offload(accounts.resolve, viewer.session_token)
            if user is not None and user.id == viewer.user_id:
                continue
            self._tabs.pop(client_token, None)
            await self._sign_out_tab(client_token)

    async def _sign_out_tab(self, client_token: str) -> None:
        token = rx.BaseStateToken(ident=client_token, cls=self.signed_out_state)
        async with self.app.modify_state(token) as root:
            state = await root.get_state(self.signed_out_state)
            state.signed_out = True
