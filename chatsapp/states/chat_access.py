"""Which chat an event acts on, and whether its sender may: every chat act passes here.

A chat's page is ``/chat/<chat id>`` for everyone who may read it. Chat ids are minted per
directory (``backend.chats.ids``: an id another directory minted is malformed in yours), so an
id names its owner: the sender's own directory if it holds the chat, else the owner of a chat
shared with the sender (``Sharing.shared_with_me``). Either way the act is then checked by
``Sharing.authorize`` (docs/sharing.md, "Roles"), read from the store on every event: a
removed member is refused at their next event, whatever their tab still shows.

A chat the sender may not read answers as one that does not exist (``ChatNotFoundError``),
so an id cannot be probed; a role that may read but not do the act gets
``ChatActRefusedError``, whose text says which role may.
"""

from __future__ import annotations

from dataclasses import dataclass

from backend.accounts import User
from backend.errors import ChatNotFoundError
from backend.messages import Author
from backend.sharing import Act, ChatRef, ChatRole
from chatsapp.auth.identity import current_viewer
from chatsapp.services import offload, services


@dataclass(frozen=True, slots=True)
class ChatAccess:
    """The chat an event acts on (``owner_id``'s directory holds it) and the sender's role."""

    owner_id: str
    chat_id: str
    role: ChatRole
    viewer_id: str

    @property
    def ref(self) -> ChatRef:
        return ChatRef(owner_id=self.owner_id, chat_id=self.chat_id)

    def author(self) -> Author:
        """Who the runtime records as writing or asking (the event's person)."""
        viewer = current_viewer()
        return Author(id=viewer.user_id, name=viewer.username)

    @property
    def shared(self) -> bool:
        """Whether the sender reads someone else's chat."""
        return self.owner_id != self.viewer_id


def person(user_id: str) -> User:
    """The account of ``user_id`` as sharing checks it; ``ChatNotFoundError`` if it has none
    (``CHATS_AUTH=none``'s local user has no account and no shared chats)."""
    user = services().accounts().user(user_id)
    if user is None:
        raise ChatNotFoundError("")
    return user


def resolve_chat(user_id: str, chat_id: object, act: Act) -> ChatAccess:
    """The chat ``chat_id`` names for ``user_id``, if they may do ``act`` there (blocking).

    Raises ``ChatNotFoundError`` (not theirs and not shared with them, deleted, malformed)
    or ``ChatActRefusedError`` (their role forbids ``act``)."""
    if not isinstance(chat_id, str) or not chat_id:
        raise ChatNotFoundError("")
    own = services().directory(user_id)
    try:
        own.get_summary(chat_id)
    except (KeyError, ValueError):
        pass
    else:
        if act == "leave":  # the owner has no membership to leave: sharing says so
            own_ref = ChatRef(owner_id=user_id, chat_id=chat_id)
            services().sharing().authorize(person(user_id), own_ref, act)
        return ChatAccess(user_id, chat_id, "owner", user_id)
    sharing = services().sharing()
    member = person(user_id)
    owner_id = next(
        (s.owner_id for s in sharing.shared_with_me(member) if s.chat_id == chat_id), None
    )
    if owner_id is None:
        raise ChatNotFoundError(chat_id)
    ref = ChatRef(owner_id=owner_id, chat_id=chat_id)
    role = sharing.authorize(member, ref, act)
    try:  # the owner's directory still holds it (a purge may be under way)
        services().directory(owner_id, touch=False).get_summary(chat_id)
    except (KeyError, ValueError) as exc:
        raise ChatNotFoundError(chat_id) from exc
    return ChatAccess(owner_id, chat_id, role, user_id)


async def chat_access(chat_id: object, act: Act) -> ChatAccess:
    """:func:`resolve_chat` for the person sending the event being handled."""
    return await offload(resolve_chat, current_viewer().user_id, chat_id, act)
