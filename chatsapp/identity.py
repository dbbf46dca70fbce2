"""Who is using this tab. One function, so an accounts layer can replace it later.

Today every tab belongs to the single local user named by ``CHATS_USER``. Shared-state tokens
are derived from the user id (``user-<id>``), so the id must be usable in one: lowercase
letters, digits and dashes (Reflex reserves ``_`` in tokens).
"""

from __future__ import annotations

import re

from chatsapp.services import services

_USER_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def resolve_user(_client_token: str = "") -> str:
    """The user id for a tab. Ignores the tab today; an auth layer would look it up."""
    user_id = services().settings.user_id
    if not _USER_ID.match(user_id):
        raise ValueError(f"CHATS_USER must match {_USER_ID.pattern}, got {user_id!r}")
    return user_id


def directory_token(user_id: str) -> str:
    return f"user-{user_id}"


def conversation_token(chat_id: str) -> str:
    # Tokens may not contain "_": hex-encode the rare id that does, so tokens never collide.
    return f"conv-{chat_id}" if "_" not in chat_id else f"conv-x{chat_id.encode().hex()}"
