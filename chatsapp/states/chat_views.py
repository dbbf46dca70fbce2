"""A chat page's shared views leave the chat the tab showed before they link the next one.

Before each event of a tab, Reflex locks every shared token the tab is linked to, and linking a
view to another token inside the event locks that one too while the others stay locked. So an
event linking a tab's views to chat B while they still show chat A holds A's lock and waits for
B's; a tab of someone else switching from B to A at that moment holds B's and waits for A's.
Both wait for ever, and with them every tab of both chats (in the in-memory state manager; in
Redis, until Reflex's lock expires).

The chat page's first event of its own (:meth:`ChatViewsTabState.leave_other_chat`, before the
events that link the transcript, the header and the people) moves the views off the chat shown
before, to a token of this tab alone (:func:`chatsapp.auth.identity.solo_token`, which no other
tab locks). Every event of a tab then takes its person's token first and at most one chat's
token after it, so no two tabs can each hold what the other waits for.
"""

from __future__ import annotations

from collections.abc import Iterable

import reflex as rx

from chatsapp.auth.identity import conversation_token, solo_token
from chatsapp.chat_route import chat_id_of_path
from chatsapp.reflex_seam import BaseState, link_to, linked_token
from chatsapp.states.chat_people import SharedChatPeopleState
from chatsapp.states.models import SharedChatSettingsState
from chatsapp.states.shared_conversation import SharedConversationState

CHAT_VIEWS: tuple[type[rx.State], ...] = (
    SharedConversationState,
    SharedChatSettingsState,
    SharedChatPeopleState,
)
"""Every shared state a chat page links to the chat's token."""


async def leave_other_chat(views: Iterable[BaseState], chat_token: str, own_token: str) -> None:
    """Link each of ``views`` that shows a chat other than ``chat_token`` to ``own_token``
    (a view already on the chat, on the tab's own token, or never linked stays)."""
    for view in views:
        shown = linked_token(view)
        if shown and shown not in (chat_token, own_token):
            await link_to(view, own_token)


class ChatViewsTabState(rx.State):
    """Per tab: the chat views' move off the chat shown before (the module says why)."""

    @rx.event
    async def leave_other_chat(self) -> None:
        """on_load of a chat page, before any of its views links to the chat."""
        chat_id = chat_id_of_path(self.router.url.path)
        views = [await self.get_state(view) for view in CHAT_VIEWS]
        own = solo_token(self.router.session.client_token)
        await leave_other_chat(views, conversation_token(chat_id), own)
