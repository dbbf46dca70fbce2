"""One shared-state change is resolved once and sent to exactly the tabs linked to that state.

Real Reflex states in a real in-memory state manager and Reflex's own token manager (which
socket serves which tab); the socket server is a recorder of what would be sent.
"""

from __future__ import annotations

import pytest
import reflex as rx
from reflex.istate.shared import SharedState
from reflex.state import State
from reflex_base.constants.route import ROUTER_VARS

import chatsapp.chatsapp  # noqa: F401  (registers every state of the app)
from chatsapp.live.fanout import shared_change
from chatsapp.live.stream_pieces import BASE_CHARS
from chatsapp.states.directory import SharedDirectoryState
from chatsapp.states.rows import ChatRow
from chatsapp.states.shared_conversation import SharedConversationState
from tests.support.fake_reflex_app import FakeReflexApp, link
from tests.support.streamed_text import StreamedText

pytestmark = pytest.mark.anyio
DIRECTORY = SharedDirectoryState.get_full_name()


async def rename(app: FakeReflexApp, user: str, title: str) -> None:
    async with shared_change(app, f"user-{user}", SharedDirectoryState) as directory:
        directory.slot_3 = ChatRow(id="c3", title=title)


@pytest.fixture
def app() -> FakeReflexApp:
    return FakeReflexApp()


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
                view.append_streamed(word)

        texts = [
            next(iter(u.delta.values()))["streaming_piece_0_rx_state_"]
            for u, _ in app.event_namespace.sent
        ]
        assert texts == ["Hello", "Hello there"]

    async def test_a_long_reply_streams_in_small_frames_that_rebuild_it_whole(self, app) -> None:
        app.event_namespace.connect("tab-1")
        await link(app, "conv-c1", SharedConversationState, "tab-1")
        flushes = [f"word{n} word{n + 1} word{n + 2} " for n in range(0, 1500, 3)]  # ~10 KB
        for text in flushes:
            async with shared_change(app, "conv-c1", SharedConversationState) as view:
                view.append_streamed(text)

        shown = StreamedText()
        carried = [shown.apply(next(iter(u.delta.values()))) for u, _ in app.event_namespace.sent]
        assert shown.text == "".join(flushes)
        whole = sum(len("".join(flushes[: n + 1])) for n in range(len(flushes)))
        assert sum(carried) * 10 < whole  # each flush re-sent the reply so far before
        assert sorted(carried)[int(0.8 * len(carried))] <= BASE_CHARS

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
            view.append_streamed("only for c1")
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
