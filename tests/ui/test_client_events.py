"""The events a client can send are exactly the handlers declared with ``@rx.event``.

Reflex registers every public method of a state as an event any client can name with any
arguments; the server-side helpers of the shared states (``reload(user_id)``, ``refresh``,
``place``, ``follow``) must not be among them, or a client names another person's user id.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
import reflex as rx

import chatsapp.chatsapp  # noqa: F401  (defines every state of the app)
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.server_only import server_only
from chatsapp.states.shared_conversation import SharedConversationState

GENERIC = {"setvar"}  # Reflex's own; the auth guard refuses it


def app_states(state: type[rx.State] = rx.State) -> Iterator[type[rx.State]]:
    if state.__module__.startswith("chatsapp"):
        yield state
    for substate in state.get_substates():
        yield from app_states(substate)


def declared_as_event(handler: object) -> bool:
    source = inspect.getsource(handler.fn)  # type: ignore[attr-defined]
    return "@rx.event" in source.split("def ", 1)[0]


class TestOnlyDeclaredEventsReachTheServer:
    def test_every_event_handler_of_the_app_is_declared_with_rx_event(self):
        undeclared = [
            f"{state.__name__}.{name}"
            for state in app_states()
            for name, handler in state.event_handlers.items()
            if name not in GENERIC and not declared_as_event(handler)
        ]
        assert not undeclared

    @pytest.mark.parametrize(
        ("state", "name"),
        [
            (SharedDirectoryState, "reload"),
            (SharedDirectoryState, "place"),
            (SharedConversationState, "refresh"),
            (SharedConversationState, "follow"),
        ],
    )
    def test_a_server_side_method_is_no_event_and_still_a_method(self, state: type, name: str):
        assert name not in state.event_handlers
        assert isinstance(state.__dict__[name], server_only)
        instance = state(_reflex_internal_init=True)
        assert callable(getattr(instance, name))

    def test_a_server_only_method_runs_on_its_state(self):
        conversation = SharedConversationState(_reflex_internal_init=True)
        conversation.follow("leaf-1")
        assert conversation.leaf_of == {"leaf-1": "leaf-1"}
