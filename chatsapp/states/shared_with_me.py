"""The sidebar's "Shared with me": chats others shared with this person, live in every tab.

Shared by every tab of one person (linked to ``user-<id>``, as their chat list). The live
layer (``chatsapp.live.sharing_live``) reloads it when the sharing change feed names the
person (added, role changed, removed, left, the owner deleted or restored the chat) and when
the owner renames a chat shared with them, so a share appears and a removal disappears in
every open tab without a reload.
"""

from __future__ import annotations

import dataclasses

import reflex as rx

from backend.errors import ChatsError
from backend.sharing import SharedChat
from chatsapp.services import offload, services
from chatsapp.states.chat_access import person
from chatsapp.states.linking import link_to_user_list
from chatsapp.states.server_only import server_only


@dataclasses.dataclass(frozen=True)
class SharedChatRow:
    """One chat shared with the person: whose it is, its title, and their role in it."""

    chat_id: str = ""
    title: str = ""
    owner_username: str = ""
    role: str = ""


def shared_rows(user_id: str) -> list[SharedChatRow]:
    """The person's shared chats, newest share first, each titled as its owner named it
    (blocking: one read of the membership, one title read per chat)."""
    try:
        found = services().sharing().shared_with_me(person(user_id))
    except ChatsError:  # no account (``CHATS_AUTH=none``): nothing is shared with anyone
        return []
    return [row for shared in found if (row := _row(shared)) is not None]


def _row(shared: SharedChat) -> SharedChatRow | None:
    try:
        summary = services().directory(shared.owner_id, touch=False).get_summary(shared.chat_id)
    except (KeyError, ValueError):  # purged since: the feed's next entry removes it
        return None
    return SharedChatRow(
        chat_id=shared.chat_id,
        title=summary.title,
        owner_username=shared.owner_username,
        role=shared.role,
    )


class SharedWithMeState(rx.SharedState):
    """The person's shared chats, shared by all their tabs (``user-<id>``)."""

    rows: list[SharedChatRow] = []
    loaded: bool = False

    @rx.event
    async def link(self) -> None:
        await link_to_user_list(self)

    @server_only
    async def reload(self, user_id: str) -> None:
        """Re-read the list; assigned only when it changed (each assignment is a frame)."""
        rows = await offload(shared_rows, user_id)
        if rows != self.rows:
            self.rows = rows
        if not self.loaded:
            self.loaded = True
