"""Linking a tab to a shared state without re-sending that state to every other linked tab.

Reflex marks every var of a shared state dirty when a tab links to it (the linking tab needs
them all), and the shared state's ``_clean()`` at the end of the event records those dirty
vars as what to fan out to the other linked tabs. So each tab that opened the app or a chat
re-sent the whole chat list and transcript view to every tab already linked: n tabs of one
person cost n²/2 full states (200 tabs of one person: ~20,000 deltas of ~5 KB each).
The other tabs already hold those values; only the linking tab needs them.

:func:`link_quietly` links, then lets the ``_clean()`` of the linking event record nothing
to fan out; later events, and the bridge's writes, fan out what they change as before. (Reflex
forbids overriding ``_clean`` in a state, so the hook is the set ``_clean`` writes into.)
"""

from __future__ import annotations

from typing import Any

from chatsapp.auth.identity import (
    SignedOutError,
    Viewer,
    current_user_id,
    current_viewer,
    directory_token,
)
from chatsapp.reflex_seam import link_to, quiet_fanned_out_changes
from chatsapp.services import services


class _QuietDuringLink(set):
    """``_previous_dirty_vars`` that records nothing during the linking event.

    The event is told apart by its viewer: :mod:`chatsapp.auth.guard` publishes a new
    :class:`~chatsapp.auth.identity.Viewer` for every event, and the bridge's tasks run without one.
    """

    def __init__(self, event_viewer: Viewer) -> None:
        super().__init__()
        self.event_viewer = event_viewer

    def update(self, *others: Any) -> None:
        if _viewer_now() is not self.event_viewer:
            super().update(*others)


def _viewer_now() -> Viewer | None:
    try:
        return current_viewer()
    except SignedOutError:
        return None


async def link_quietly(state: Any, token: str) -> Any:
    """Link ``state`` to ``token``, fanning out nothing of the link to the tabs already linked."""
    linked = await link_to(state, token)
    viewer = _viewer_now()
    if viewer is not None:
        quiet_fanned_out_changes(linked, _QuietDuringLink(viewer))
    return linked


async def link_to_user_list(state: Any) -> None:
    """Link a list shared by every tab of the user, reading it if no tab has yet.

    ``state`` is the shared state of an on_load (its class has ``loaded`` and
    ``reload(user_id)``); the tabs already linked are sent nothing.
    """
    user_id = current_user_id()
    services().tab_opened(user_id, state.router.session.client_token)
    linked = await link_quietly(state, directory_token(user_id))
    if not linked.loaded:
        await linked.reload(user_id)
