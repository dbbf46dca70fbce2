"""Bounded pumps: a chat's run events are pumped only while a tab watches it.

The bridge runs against a real runtime (a ``tmp_path`` data folder) and a stand-in for the
Reflex app that records what the pump writes, so these run in milliseconds and need no browser.
"""

from __future__ import annotations

import asyncio

import pytest

from backend.agents import AgentSpec
from backend.config import Settings
from chatsapp.auth.identity import conversation_token
from chatsapp.services import Services
from tests.support.bridge_views import USER, new_chat, views_of, watchers
from tests.support.deadlines import until
from tests.support.fake_reflex_app import FakeReflexApp

pytestmark = pytest.mark.anyio


class TestPumpsFollowTheTabsThatWatch:
    async def test_a_pump_is_released_when_its_last_tab_leaves(self, live) -> None:
        served, app = live
        chat = new_chat(served)
        served.conversation_opened(USER, chat, "tab-1")
        served.conversation_opened(USER, chat, "tab-2")
        await until(lambda: watchers(served) == 1)
        assert app.bridge.footprint()["pumps"] == 1

        app.bridge.tab_left("tab-1")
        await asyncio.sleep(0)  # a release would be scheduled on the loop
        assert app.bridge.footprint()["pumps"] == 1  # tab-2 still watches

        app.bridge.tab_left("tab-2")
        await until(lambda: watchers(served) == 0)
        released = {"pumps": 0, "watched_chats": 0, "watching_tabs": 0, "tasks": 0}
        await until(lambda: app.bridge.footprint().items() >= released.items())
        assert served.runtime(USER).footprint().event_logs == 0

    async def test_a_pump_comes_back_when_a_tab_returns_and_delivers_the_reply(self, live) -> None:
        served, app = live
        chat = new_chat(served)
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        app.bridge.tab_left("tab-1")
        await until(lambda: app.bridge.footprint()["pumps"] == 0)

        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        view = views_of(app)[conversation_token(chat)]
        runtime = served.runtime(USER)
        await runtime.send_message(chat, "hello")
        await runtime.wait_idle(chat)
        # run.queued and run.completed each re-read the window; the reply streamed in between.
        await until(lambda: len(view.refreshed) == 2)
        assert (view.streaming, view.queued, view.error) == (False, 0, "")

    async def test_opening_another_chat_releases_the_one_the_tab_showed(self, live) -> None:
        served, app = live
        first, second = new_chat(served), new_chat(served)
        served.conversation_opened(USER, first, "tab-1")
        served.conversation_opened(USER, second, "tab-1")
        await until(lambda: app.bridge.footprint()["pumps"] == 1 and watchers(served) == 1)
        assert app.bridge.pumped_chats() == {(USER, second)}

    async def test_a_tab_whose_socket_closes_stops_watching(self, live) -> None:
        served, app = live
        chat = new_chat(served)
        app.event_namespace.sid_to_token["sid-1"] = "tab-1"
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        app.event_namespace.on_disconnect("sid-1")
        await until(lambda: watchers(served) == 0 and app.bridge.footprint()["pumps"] == 0)

    async def test_a_chat_opened_after_its_tab_closed_is_not_watched(self, live) -> None:
        # Reflex may handle a tab's "open this chat" after the tab's socket closed (a tab
        # closed right after it opened a chat): nothing would ever release that watch.
        served, app = live
        chat = new_chat(served)
        await connect(app, "sid-1", "tab-1")
        app.event_namespace.on_disconnect("sid-1")
        served.conversation_opened(USER, chat, "tab-1")
        served.tab_opened(USER, "tab-1")
        await asyncio.sleep(0.05)
        held = ("pumps", "watched_chats", "watching_tabs", "tasks", "connected_people")
        assert {name: app.bridge.footprint()[name] for name in held} == dict.fromkeys(held, 0)
        assert watchers(served) == 0

    async def test_a_tab_that_reconnects_with_its_token_watches_again(self, live) -> None:
        served, app = live
        chat = new_chat(served)
        await connect(app, "sid-1", "tab-1")
        app.event_namespace.on_disconnect("sid-1")
        # Its first events are handled inside the connect: they already count.
        app.event_namespace.on_first_events = lambda token: served.conversation_opened(
            USER, chat, token
        )
        await connect(app, "sid-2", "tab-1")
        await until(lambda: watchers(served) == 1)
        assert app.bridge.footprint()["watching_tabs"] == 1

    async def test_closed_tabs_are_remembered_up_to_a_bound(self, live, monkeypatch) -> None:
        _served, app = live
        app.bridge.sockets.closed_memory = 3
        for n in range(5):
            await connect(app, f"sid-{n}", f"tab-{n}")
            app.event_namespace.on_disconnect(f"sid-{n}")
        assert [app.bridge.sockets.is_closed(f"tab-{n}") for n in range(5)] == [False, False] + [
            True
        ] * 3


class TestDirectoryEventsReachTheChatView:
    async def test_a_rename_shows_the_title_the_event_carries_without_a_read(
        self, live, monkeypatch
    ) -> None:
        served, app = live
        chat = new_chat(served)
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        reads: list[str] = []
        directory = served.directory(USER)
        original = directory.get_summary
        monkeypatch.setattr(directory, "get_summary", lambda c: reads.append(c) or original(c))
        directory.rename_chat(chat, "Trip to Lisbon")
        await until(
            lambda: (
                getattr(views_of(app)[conversation_token(chat)], "title", "") == "Trip to Lisbon"
            )
        )
        assert reads == []

    async def test_a_deleted_chat_is_shown_as_deleted(self, live) -> None:
        served, app = live
        chat = new_chat(served)
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        served.directory(USER).delete_chat(chat)
        await until(lambda: getattr(views_of(app)[conversation_token(chat)], "deleted", False))


async def connect(app: FakeReflexApp, sid: str, token: str) -> None:
    await app.event_namespace.on_connect(sid, {"QUERY_STRING": f"token={token}"})


class TestHeadersFollowAgentSavesOnOtherWorkers:
    async def test_an_agent_saved_by_another_process_refreshes_the_headers_shown_here(
        self, live, tmp_path
    ) -> None:
        served, app = live
        chat = new_chat(served)
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        header = views_of(app)[conversation_token(chat)]
        header.chat_id = chat  # a tab linked the header
        seen = len(header.refreshed)

        # Another worker on the same data folder: its own stores, none of this one's hooks.
        other = Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}))
        try:
            spec = AgentSpec(name="Writer", instructions="Write tersely.")
            other.agents(USER).create(spec)
            await until(lambda: len(header.refreshed) > seen)
        finally:
            await other.shutdown()


class TestTheHeaderDoesNotHoldUpTheChat:
    async def test_a_slow_header_read_delays_no_run_event_and_is_redone_once_after(
        self, live
    ) -> None:
        """A run's header and meter are re-read after it starts and ends; while that read
        waits, the reply still reaches the transcript (the pump awaited it before: every
        tab got the run's first words one meter read late)."""
        served, app = live
        chat = new_chat(served)
        gate, reads = asyncio.Event(), []

        async def slow_header_read(user_id: str, chat_id: str, only_agent: str = "") -> None:
            reads.append(chat_id)
            await gate.wait()

        app.bridge._refresh_chat_settings = slow_header_read
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: watchers(served) == 1)
        view = views_of(app)[conversation_token(chat)]
        runtime = served.runtime(USER)
        await runtime.send_message(chat, "hello")
        await runtime.wait_idle(chat)
        await until(lambda: len(view.refreshed) == 2 and not view.streaming)
        # The read after run.started still waits; the one run.completed asked for is pending.
        assert app.bridge._header_refreshes == {(USER, chat): True}
        before = len(reads)

        gate.set()
        await until(lambda: not app.bridge._header_refreshes)
        assert len(reads) == before + 1  # redone once, after the read it waited behind
