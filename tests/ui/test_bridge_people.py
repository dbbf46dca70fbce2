"""Bounded people: a person's directory, runtime and change watch are open only while a tab
of theirs is connected (plus a grace period), or a run or a background job of theirs uses them.

Same stand-ins as ``test_bridge_pumps`` (a real runtime in ``tmp_path``, a fake Reflex app);
the grace periods are shortened so each test takes milliseconds.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest

from backend.chats import Chats
from backend.runtime import ChatRuntime
from backend.runtime.records import RunStatus
from chatsapp.auth.identity import conversation_token, directory_token
from chatsapp.live import bridge, person_releases
from chatsapp.live.bridge import LiveBridge
from chatsapp.services import Release, Services
from tests.support.bridge_views import USER, files_open_under, views_of
from tests.support.deadlines import until
from tests.support.fake_reflex_app import FakeReflexApp

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge, "DIRECTORY_GRACE_S", 0.02)


def sidebar_reloads(app: FakeReflexApp) -> int:
    view = views_of(app).get(directory_token(USER))
    return 0 if view is None else view.reloads


async def after_the_reopening_refresh(app: FakeReflexApp, since: int) -> int:
    """The sidebar's reloads once the re-read that follows a reopening is over (so a later
    reload comes from the change feed); ``since``: the reloads before the reopening."""
    await until(lambda: sidebar_reloads(app) > since and not app.bridge.refreshes_running())
    return sidebar_reloads(app)


def released(served: Services, app: FakeReflexApp) -> bool:
    assert isinstance(app.bridge, LiveBridge)
    return served.footprint()["directories"] == 0 and "directory_releases" not in {
        k for k, v in app.bridge.footprint().items() if v
    }


class TestAPersonIsReleasedWhenTheirLastTabLeaves:
    async def test_the_directory_its_files_and_its_change_watch_go_after_the_grace(
        self, live, tmp_path: Path
    ) -> None:
        served, app = live
        served.tab_opened(USER, "tab-1")
        served.directory(USER).create_chat()
        served.runtime(USER)
        watcher = served.directory(USER)._watcher
        assert watcher.running  # the bridge listens to the directory
        assert files_open_under(tmp_path / USER) > 0
        await after_the_reopening_refresh(app, 0)  # (a later one would open it again)

        app.bridge.tab_left("tab-1")
        await until(lambda: released(served, app))
        await until(lambda: not watcher.running and files_open_under(tmp_path / USER) == 0)
        assert served.footprint() == {
            "directories": 0,
            "runtimes": 0,
            "libraries": 0,
            "held": 0,
        }
        # The bridge forgets its subscription when the release it awaited returns to the loop.
        await until(lambda: app.bridge.footprint()["watched_directories"] == 0)

    async def test_another_tab_of_the_person_keeps_it_open(self, live) -> None:
        served, app = live
        served.tab_opened(USER, "tab-1")
        served.tab_opened(USER, "tab-2")
        chats = served.directory(USER)
        app.bridge.tab_left("tab-1")
        assert app.bridge.footprint()["directory_releases"] == 0
        assert served.directory(USER) is chats and not chats.closed

    async def test_a_tab_returning_within_the_grace_cancels_the_release(
        self, live, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        served, app = live
        app.bridge.directory_grace_s = 3600.0
        served.tab_opened(USER, "tab-1")
        chats = served.directory(USER)
        app.bridge.tab_left("tab-1")
        assert app.bridge.footprint()["directory_releases"] == 1
        served.tab_opened(USER, "tab-1")
        assert app.bridge.footprint()["directory_releases"] == 0
        assert served.directory(USER) is chats

    async def test_a_directory_opened_without_a_tab_is_released_too(self, live) -> None:
        served, app = live
        served.directory(USER)  # an export, a late sidebar refresh
        await until(lambda: released(served, app))


class TestAReturningPersonSeesEverythingLive:
    async def test_a_later_tab_sees_the_chats_and_gets_live_sidebar_updates(self, live) -> None:
        served, app = live
        served.tab_opened(USER, "tab-1")
        first = served.directory(USER).create_chat().id
        app.bridge.tab_left("tab-1")
        await until(lambda: released(served, app))

        since = sidebar_reloads(app)
        served.tab_opened(USER, "tab-2")
        chats = served.directory(USER)
        assert [chat.id for chat in chats.list_chats()] == [first]
        before = await after_the_reopening_refresh(app, since)
        chats.create_chat()
        await until(lambda: sidebar_reloads(app) > before)
        assert app.bridge.footprint()["watched_directories"] == 1


class TestARunKeepsItsPersonOpen:
    async def test_a_streaming_reply_finishes_and_is_saved_before_the_release(
        self, live, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        served, app = live
        served.settings = dataclasses.replace(served.settings, offline_chunk_delay_s=0.01)
        busy_at_release: list[int] = []
        original_release = ChatRuntime.release

        async def release(runtime: ChatRuntime) -> None:
            busy_at_release.append(runtime.footprint().busy_chats)
            await original_release(runtime)

        monkeypatch.setattr(ChatRuntime, "release", release)
        app.bridge.release_grace_s = 0.0
        chat = served.directory(USER).create_chat().id
        served.conversation_opened(USER, chat, "tab-1")
        ticket = await served.runtime(USER).send_message(chat, "tell me something long")
        await until(lambda: views_of(app)[conversation_token(chat)].streaming)

        app.bridge.tab_left("tab-1")
        await until(lambda: released(served, app) and busy_at_release)
        assert busy_at_release and set(busy_at_release) == {0}
        served.tab_opened(USER, "tab-2")  # a tab reads it (none could be released meanwhile)
        run = await served.runtime(USER).get_run(chat, ticket.run_id)
        assert run.status == RunStatus.COMPLETED


class TestReleaseRacingANewTab:
    async def test_a_tab_arriving_while_the_directory_closes_gets_an_open_one(
        self, live, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        served, app = live
        closing, may_close = threading.Event(), threading.Event()
        original_close = Chats.close

        def slow_close(chats: Chats) -> None:
            closing.set()
            may_close.wait(10)
            original_close(chats)

        monkeypatch.setattr(Chats, "close", slow_close)
        served.tab_opened(USER, "tab-1")
        old = served.directory(USER)
        app.bridge.tab_left("tab-1")
        await until(closing.is_set)

        since = sidebar_reloads(app)
        served.tab_opened(USER, "tab-2")
        new = served.directory(USER)
        assert new is not old and not new.closed
        may_close.set()
        await until(lambda: old.closed)
        await until(lambda: not app.bridge.footprint()["tasks"])

        before = await after_the_reopening_refresh(app, since)
        new.create_chat()
        await until(lambda: sidebar_reloads(app) > before)
        assert app.bridge.footprint()["watched_directories"] == 1
        assert served.footprint()["directories"] == 1


class TestABackgroundJobKeepsItsPersonOpen:
    async def test_a_held_directory_is_not_released_until_the_job_ends(self, live) -> None:
        served, _app = live
        with served.hold(USER) as chats:  # an import
            assert await served.release_idle(USER, 0.0) is Release.BUSY
            assert not chats.closed
        assert await served.release_idle(USER, 0.0) is Release.RELEASED
        assert chats.closed

    async def test_the_archive_pass_holds_each_directory_it_works_on(
        self, live, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        served, _app = live
        served.directory(USER)
        held_during_pass: list[int] = []

        def archive_untouched(chats: Chats) -> list[str]:
            held_during_pass.append(served.footprint()["held"])
            return []

        monkeypatch.setattr(Chats, "archive_untouched", archive_untouched)
        served.archive_untouched()
        assert held_during_pass == [1]
        assert served.footprint()["held"] == 0


class TestOpenPeopleAreCapped:
    async def test_past_the_cap_the_least_recently_used_person_without_a_tab_goes_first(
        self, live, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        served, app = live
        app.bridge.directory_grace_s = 3600.0
        monkeypatch.setattr(person_releases, "MAX_OPEN_PEOPLE", 2)
        monkeypatch.setattr(person_releases, "LRU_MIN_IDLE_S", 0.0)
        served.tab_opened("connected", "tab-1")
        served.directory("connected")  # least recently used, but a tab of theirs is open
        served.directory("oldest")
        served.directory("newer")
        served.directory("newest")
        await until(lambda: served.people_by_last_use() == ["connected", "newest"])
        await until(lambda: not app.bridge.footprint()["tasks"])
        assert served.footprint()["directories"] == 2

    async def test_a_read_on_the_bridges_behalf_is_not_use(self, live) -> None:
        served, _app = live
        served.directory("read-by-a-refresh")
        served.directory("used")
        served.directory("read-by-a-refresh", touch=False)
        served.projects("read-by-a-refresh", touch=False)
        assert served.people_by_last_use() == ["read-by-a-refresh", "used"]

    async def test_a_directory_a_late_refresh_opens_again_is_the_first_to_go(self, live) -> None:
        # A refresh queued before its person was released must not make them the newest
        # (CI once evicted the newest person instead: the late refresh had reopened the oldest).
        served, app = live
        app.bridge.directory_grace_s = 3600.0
        served.directory("used")
        served.directory("released")
        assert await served.release_idle("released", 0.0) is Release.RELEASED
        served.directory("released", touch=False)
        assert served.people_by_last_use() == ["released", "used"]

    async def test_a_refresh_of_a_released_directory_does_not_open_it(self, live) -> None:
        served, app = live
        app.bridge.directory_grace_s = 3600.0
        served.directory("released")
        await until(lambda: not app.bridge.refreshes_running())
        assert await served.release_idle("released", 0.0) is Release.RELEASED
        app.bridge.projects_changed("released")  # a change heard after the release
        await until(lambda: not app.bridge.refreshes_running())
        assert not served.is_open("released")


class TestChangesMadeWhileReleasedAreShown:
    async def test_a_chat_another_process_created_meanwhile_reaches_the_sidebar(
        self, live, tmp_path: Path
    ) -> None:
        served, app = live
        served.tab_opened(USER, "tab-1")
        served.directory(USER)
        app.bridge.tab_left("tab-1")
        await until(lambda: released(served, app))
        before = sidebar_reloads(app)
        with Chats(tmp_path, USER) as other_process:
            other_process.create_chat("Imported by the CLI")

        served.tab_opened(USER, "tab-2")
        served.directory(USER)
        await until(lambda: sidebar_reloads(app) > before)
