"""``/``: go to the most recent chat, or stay on the empty state when there is none."""

from __future__ import annotations

import reflex as rx

from chatsapp.auth.identity import current_user_id
from chatsapp.routes.home_redirect import latest_chat_path
from chatsapp.services import offload


class HomeTabState(rx.State):
    """Per tab: ``/`` sends this tab to the user's latest chat.

    A page loaded from the server already went there (:mod:`chatsapp.routes.home_redirect`); this
    covers ``/`` reached inside the app and the development server. Until it is decided the
    page shows no "Start a conversation": someone with chats would see it flash before the
    redirect, and a click on it would race the redirect.
    """

    no_chats: bool = False

    @rx.event
    async def open_latest(self):  # noqa: ANN201
        target = await offload(latest_chat_path, current_user_id())
        self.no_chats = target is None
        return None if target is None else rx.redirect(target)
