"""``/``: go to the most recent chat, or stay on the empty state when there is none."""

from __future__ import annotations

import reflex as rx

from chatsapp.identity import current_user_id
from chatsapp.services import offload, services


class HomeTabState(rx.State):
    """Per tab: ``/`` sends this tab to the user's latest chat.

    Until that is decided the page shows no "Start a conversation": someone with chats would
    see it flash before the redirect, and a click on it would race the redirect.
    """

    no_chats: bool = False

    @rx.event
    async def open_latest(self):  # noqa: ANN201
        chats = services().directory(current_user_id())
        latest = await offload(chats.list_chats, limit=1)
        self.no_chats = not latest
        if latest:
            return rx.redirect(f"/chat/{latest[0].id}")
        return None
