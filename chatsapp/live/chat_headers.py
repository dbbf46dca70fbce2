"""A chat's header and context meter, re-read when what they show may have changed.

Part of :class:`chatsapp.live.bridge.LiveBridge` (a mixin, so the bridge stays one reader's
size): after a run, after an agent is saved in any tab of the person, and after a directory
change when the person's agents were saved elsewhere (another worker or process).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import reflex as rx

from chatsapp.auth.identity import conversation_token
from chatsapp.services import Services, offload

log = logging.getLogger(__name__)


class ChatHeaders:
    """The header refreshes of the bridge (the bridge provides what is declared here)."""

    services: Services
    header_state: type[rx.State]  # ``refresh(user_id)``, ``chat_id``, ``agent_id``
    _agent_saves_seen: dict[str, int]
    # (user, chat) -> asked again while its refresh runs (see _request_header_refresh)
    _header_refreshes: dict[tuple[str, str], bool]
    _watchers: dict[tuple[str, str], set[str]]
    _spawn: Callable[[Coroutine[Any, Any, None]], Any]
    _modify: Callable[[str, type[rx.State]], contextlib.AbstractAsyncContextManager[Any]]

    async def _headers_if_agents_changed(self, user_id: str) -> None:
        """An agent saved by another worker or process changes no chat row here: after a
        change to the directory, compare the agents' save count with the last one seen and, if
        it moved, re-read the headers this worker's tabs show (a few, not every chat)."""
        saved = await offload(self.services.agents(user_id).versions_saved)
        seen = self._agent_saves_seen.get(user_id)  # None: not read yet, so not known current
        self._agent_saves_seen[user_id] = saved
        if saved != seen:
            self._refresh_watched_headers(user_id)

    def _refresh_watched_headers(self, user_id: str, only_agent: str = "") -> None:
        for watched_user, chat_id in list(self._watchers):
            if watched_user == user_id:
                self._spawn(self._refresh_chat_settings(user_id, chat_id, only_agent=only_agent))

    def _request_header_refresh(self, user_id: str, chat_id: str) -> None:
        """After a run event: re-read the chat's header and meter without holding up the
        chat's next events (the pump awaited it: a run's first words and the next message
        reached every tab ~5-12 ms later, the time of a meter read). A request made while a
        refresh runs is done once more after it, so the last one reads the final state."""
        key = (user_id, chat_id)
        if key in self._header_refreshes:
            self._header_refreshes[key] = True
            return
        self._header_refreshes[key] = False
        self._spawn(self._refresh_header_until_current(key))

    async def _refresh_header_until_current(self, key: tuple[str, str]) -> None:
        try:
            await self._refresh_chat_settings(*key)
            while self._header_refreshes.get(key):
                self._header_refreshes[key] = False
                await self._refresh_chat_settings(*key)
        finally:
            self._header_refreshes.pop(key, None)

    async def _refresh_chat_settings(
        self, user_id: str, chat_id: str, only_agent: str = ""
    ) -> None:
        """Re-read a chat's header and meter, if a tab linked them (and, with ``only_agent``,
        if the chat is bound to that agent)."""
        token = conversation_token(chat_id)
        async with self._modify(token, self.header_state) as state:
            if state.chat_id and (not only_agent or state.agent_id == only_agent):
                try:
                    await state.refresh(user_id)
                except Exception:  # a header left stale must not stop the chat's run pump
                    log.warning("could not refresh the header of chat %s", chat_id, exc_info=True)
