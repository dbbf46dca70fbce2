"""Methods of a state that the server calls and no client may.

Reflex makes every public method of a state class an event handler, and any client can name an
event handler over the websocket with arguments of its choosing. A shared state's
``reload(user_id)`` reached that way read the list of whoever the client named into the
client's own shared state: a hostile tab of bob's, naming alice's user id, was sent her chat
titles and ids. :class:`server_only` keeps such a method callable from Python (handlers, the
bridge) but out of the state's event handlers: Reflex only registers plain functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class server_only(Generic[F]):
    """Decorator: the method stays a method of the state, and is no event a client can send."""

    def __init__(self, fn: F) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, instance: Any, owner: type | None = None) -> F:
        return self.fn.__get__(instance, owner) if instance is not None else self.fn
