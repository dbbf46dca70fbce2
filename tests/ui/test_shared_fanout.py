"""One shared-state change is resolved once and sent to exactly the tabs linked to that state.

Real Reflex states in a real in-memory state manager and Reflex's own token manager (which
socket serves which tab); the socket server is a recorder of what would be sent.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import pytest
import reflex as rx
from reflex.istate.manager.memory import StateManagerMemory
from reflex.istate.shared import SharedState
from reflex.state import State
from reflex.utils.token_manager import LocalTokenManager, SocketRecord
from reflex_base.constants.route import ROUTER_VARS

import chatsapp.chatsapp  # noqa: F401  (registers every state of the app)
from chatsapp.fanout import shared_change
from chatsapp.states.conversation import SharedConversationState
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.rows import ChatRow

pytestmark = pytest.mark.anyio
DIRECTORY = SharedDirectoryState.get_full_name()


@dataclass
class Sockets:
    """Reflex's namespace as the fan-out uses it: the token manager, and emits recorded."""

    _token_manager: LocalTokenManager = field(default_factory=LocalTokenManager)
    sent: list[tuple[Any, list[str]]] = field(default_factory=list)

    async def emit(self, _event: str, update: Any, to: list[str]) -> None:
        self.sent.append((update, sorted(to)))

    def connect(self, tab: str) -> str:
        sid = f"sid-{tab}"
        record = SocketRecord(instance_id=self._token_manager.instance_id, sid=sid)
        self._token_manager.token_to_socket[tab] = record
        self._token_manager.sid_to_token[sid] = tab
        return sid


@dataclass
class App:
    state_manager: StateManagerMemory = field(default_factory=StateManagerMemory)
    event_namespace: Sockets = field(default_factory=Sockets)

    def set_contexts(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


async def link(app: App, shared_token: str, cls: type[rx.State], *tabs: str) -> None:
    """What a tab's link leaves in the shared state: its token in ``_linked_from``."""
    token = rx.BaseStateToken(ident=shared_token, cls=cls)
    async with app.state_manager.modify_state(token) as root:
        state = await root.get_state(cls)
        state._linked_from.update(tabs)
        root._clean()


async def rename(app: App, user: str, title: str) -> None:
    async with shared_change(app, f"user-{user}", SharedDirectoryState) as directory:
        directory.slot_3 = ChatRow(id="c3", title=title)


@pytest.fixture
def app() -> App:
    return App()


class TestOneChangeReachesEveryLinkedTabOnce:
    async def test_a_change_is_encoded_once_for_every_linked_tab_of_this_worker(self, app) -> None:
        tabs = [f"tab-{n}" for n in range(3)]
        sids = sorted(app.event_namespace.connect(tab) for tab in tabs)
        await link(app, "user-alice", SharedDirectoryState, *tabs)

        await rename(app, "alice", "Trip to Lisbon")

        ((update, to),) = app.event_namespace.sent
        assert to == sids
        assert update.delta == {
            DIRECTORY: {"slot_3_rx_state_": ChatRow(id="c3", title="Trip to Lisbon")}
        }

    async def test_two_changes_reach_the_tabs_in_the_order_they_were_made(self, app) -> None:
        app.event_namespace.connect("tab-1")
        await link(app, "conv-c1", SharedConversationState, "tab-1")
        for word in ("Hello", " there"):
            async with shared_change(app, "conv-c1", SharedConversationState) as view:
                view.streaming_text += word

        texts = [
            next(iter(u.delta.values()))["streaming_text_rx_state_"]
            for u, _ in app.event_namespace.sent
        ]
        assert texts == ["Hello", "Hello there"]

    async def test_a_change_that_changes_nothing_sends_nothing(self, app) -> None:
        app.event_namespace.connect("tab-1")
        await link(app, "user-alice", SharedDirectoryState, "tab-1")
        async with shared_change(app, "user-alice", SharedDirectoryState):
            pass
        assert app.event_namespace.sent == []

    async def test_the_change_is_not_fanned_out_again_by_a_later_event(self, app) -> None:
        app.event_namespace.connect("tab-1")
        await link(app, "user-alice", SharedDirectoryState, "tab-1")
        await rename(app, "alice", "Once")
        token = rx.BaseStateToken(ident="user-alice", cls=SharedDirectoryState)
        async with app.state_manager.modify_state(token) as root:
            directory = await root.get_state(SharedDirectoryState)
            assert not directory._previous_dirty_vars  # what Reflex would re-send to every tab


class TestNothingReachesATabThatIsNotLinked:
    async def test_another_persons_tab_on_the_same_worker_receives_nothing(self, app) -> None:
        app.event_namespace.connect("alice-tab")
        bob_sid = app.event_namespace.connect("bob-tab")
        await link(app, "user-alice", SharedDirectoryState, "alice-tab")
        await link(app, "user-bob", SharedDirectoryState, "bob-tab")

        await rename(app, "alice", "Alice's secret plan")

        assert all(bob_sid not in to for _update, to in app.event_namespace.sent)
        assert len(app.event_namespace.sent) == 1

    async def test_a_tab_linked_to_another_chat_receives_nothing_of_this_one(self, app) -> None:
        app.event_namespace.connect("tab-a")
        other = app.event_namespace.connect("tab-b")
        await link(app, "conv-c1", SharedConversationState, "tab-a")
        await link(app, "conv-c2", SharedConversationState, "tab-b")
        async with shared_change(app, "conv-c1", SharedConversationState) as view:
            view.streaming_text = "only for c1"
        ((_update, to),) = app.event_namespace.sent
        assert other not in to

    async def test_a_closed_tab_is_skipped(self, app) -> None:
        live = app.event_namespace.connect("open-tab")
        await link(app, "user-alice", SharedDirectoryState, "open-tab", "closed-tab")
        await rename(app, "alice", "Renamed")
        ((_update, to),) = app.event_namespace.sent
        assert to == [live]

    async def test_only_the_shared_states_entries_are_sent_never_the_tokens_root(self, app) -> None:
        app.event_namespace.connect("tab-1")
        await link(app, "user-alice", SharedDirectoryState, "tab-1")
        async with shared_change(app, "user-alice", SharedDirectoryState) as directory:
            directory.slot_0 = ChatRow(id="c0", title="New")
            root = directory._get_root_state()
            # As Reflex's patch of a shared state into a tree marks them: the shared token's
            # router and route var (``chat_id``) are nobody's, and a tab's differ.
            root.dirty_vars.update(ROUTER_VARS)
            root._mark_dirty()
        ((update, _to),) = app.event_namespace.sent
        assert list(update.delta) == [DIRECTORY]


class TestTheDeltaDoesNotDependOnTheTab:
    def test_no_computed_var_of_the_app_reads_a_shared_state(self) -> None:
        """Why one delta fits every tab: a tab's own vars never change when a shared one does
        (if this fails, the fan-out must resolve those dependants per tab again)."""
        pending: list[type] = [State]
        shared: list[type] = []
        while pending:
            cls = pending.pop()
            pending.extend(cls.get_substates())
            if issubclass(cls, SharedState):
                shared.append(cls)
        assert {c.__name__ for c in shared} >= {"SharedDirectoryState", "SharedConversationState"}
        readers = {c.__name__: c._var_dependencies for c in shared if c._var_dependencies}
        computed = {c.__name__: list(c.computed_vars) for c in shared if c.computed_vars}
        assert (readers, computed) == ({}, {})
