"""The address of a chat's page: built here and read here, nowhere else.

``/chat/<chat id>``, with ``?m=<message id>`` when a search hit asks for one message to be
scrolled into view. Pages, links, redirects and the sign-in return address all use it.
"""

from __future__ import annotations

from typing import TypeVar

CHAT_ROUTE = "/chat/[chat_id]"
"""The page's route as Reflex declares it."""
_PREFIX = "/chat/"
MESSAGE_PARAMETER = "m"

T = TypeVar("T")


def chat_path(chat_id: T, message_id: T | None = None) -> str:
    """The page of ``chat_id`` (a value or a state var), scrolled to ``message_id`` if given."""
    path = f"{_PREFIX}{chat_id}"
    return path if message_id is None else f"{path}?{MESSAGE_PARAMETER}={message_id}"


def chat_id_of_path(path: str) -> str:
    """The chat a page address shows ("" when it is not a chat's page)."""
    if not path.startswith(_PREFIX):
        return ""
    return path.removeprefix(_PREFIX).split("?", 1)[0].strip("/").split("/", 1)[0]
