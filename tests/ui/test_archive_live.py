"""Archive is live: the bridge moves a chat between the lists of every tab and updates the
header of a tab that shows it; the server applies the archive policy while it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from backend.chats import (
    ChatArchived,
    ChatDeleted,
    ChatRenamed,
    Chats,
    ChatSummary,
    ChatTurnRecorded,
    ChatUnarchived,
    DirectoryChanged,
)
from backend.chats.archive_policy import DAY_MS
from backend.chats.sidebar import SidebarPage
from backend.config import Settings
from chatsapp.auth.identity import conversation_token
from chatsapp.live.bridge import touches_archive
from chatsapp.services import Services
from tests.chats.conftest import FakeClock
from tests.support.bridge_views import USER, View, new_chat, views_of
from tests.support.deadlines import until

pytestmark = pytest.mark.anyio


class TestArchiveReachesEveryTab:
    async def test_archiving_re_reads_the_archived_list_once_a_tab_has_shown_it(
        self, live, monkeypatch
    ):
        served, app = live
        chat = new_chat(served)
        await until(lambda: views_of(app).get(f"user-{USER}", View()).reloads >= 1)
        user_view = views_of(app)[f"user-{USER}"]
        user_view.loaded = True  # a tab linked the archived list
        before = user_view.reloads
        pages: list[SidebarPage] = []
        read_page = Chats.sidebar_page

        def recorded(chats: Chats, *, with_archived: bool = False) -> SidebarPage:
            pages.append(read_page(chats, with_archived=with_archived))
            return pages[-1]

        monkeypatch.setattr(Chats, "sidebar_page", recorded)
        served.directory(USER).archive_chat(chat)
        # The main list and the archived list are both shown again, from one read of the page.
        await until(lambda: user_view.reloads >= before + 2)
        page = next(p for p in pages if p.archived is not None)
        assert [c.id for c in page.archived or ()] == [chat]
        assert chat not in [c.id for c in page.chats]

    async def test_the_page_lists_archived_chats_only_when_asked(self, live):
        served, _app = live
        kept, archived = new_chat(served), new_chat(served)
        chats = served.directory(USER)
        chats.archive_chat(archived)
        assert chats.sidebar_page().archived is None
        page = chats.sidebar_page(with_archived=True)
        assert ([c.id for c in page.chats], [c.id for c in page.archived or ()]) == (
            [kept],
            [archived],
        )

    async def test_the_header_of_a_tab_showing_the_chat_follows_its_archive(self, live):
        served, app = live
        chat = new_chat(served)
        served.conversation_opened(USER, chat, "tab-1")
        await until(lambda: conversation_token(chat) in views_of(app))
        header = views_of(app)[conversation_token(chat)]
        header.loaded = True
        served.directory(USER).archive_chat(chat)
        await until(lambda: header.archived)
        served.directory(USER).unarchive_chat(chat)
        await until(lambda: not header.archived)

    async def test_a_chat_no_tab_shows_gets_no_header_state(self, live):
        served, app = live
        unseen, shown = new_chat(served), new_chat(served)
        served.conversation_opened(USER, shown, "tab-1")
        await until(lambda: conversation_token(shown) in views_of(app))
        views_of(app)[conversation_token(shown)].loaded = True
        served.directory(USER).archive_chat(unseen)
        served.directory(USER).archive_chat(shown)
        # Events are handled in order: once the later one is shown, the earlier one was handled.
        await until(lambda: views_of(app)[conversation_token(shown)].archived)
        assert conversation_token(unseen) not in views_of(app)


class TestOnlyArchiveChangesReReadTheArchivedList:
    def summary(self, archived_at: int | None = None) -> ChatSummary:
        return ChatSummary(id="c1", title="t", created_at=1, updated_at=2, archived_at=archived_at)

    def test_a_reply_or_rename_in_a_listed_chat_leaves_the_archived_list_alone(self):
        for event in (ChatTurnRecorded(USER, self.summary()), ChatRenamed(USER, self.summary())):
            assert not touches_archive(event)

    def test_archive_moves_deletes_foreign_changes_and_archived_chats_re_read_it(self):
        archived = self.summary(archived_at=5)
        for event in (
            ChatArchived(USER, archived),
            ChatUnarchived(USER, self.summary()),
            ChatDeleted(USER, "c1"),
            DirectoryChanged(USER),
            ChatTurnRecorded(USER, archived),
            ChatRenamed(USER, archived),
        ):
            assert touches_archive(event), event


class TestThePolicyRunsWhileTheServerRuns:
    def make(self, tmp_path: Path, clock: FakeClock) -> Services:
        return Services(Settings.from_env({"CHATS_DATA_DIR": str(tmp_path)}), clock=clock)

    async def test_a_pass_archives_the_untouched_chats_of_every_open_directory(self, tmp_path):
        clock = FakeClock()
        served = self.make(tmp_path, clock)
        alice, bob = served.directory("alice"), served.directory("bob")
        old = alice.create_chat().id
        bob.create_chat()
        alice.set_auto_archive_days(2)  # bob's policy stays off
        clock.advance(2 * DAY_MS + 1)
        assert served.archive_untouched() == 1
        assert [s.id for s in alice.list_chats(archived=True)] == [old]
        assert len(bob.list_chats()) == 1
        alice.close()
        bob.close()

    async def test_the_periodic_task_keeps_running_passes(self, tmp_path):
        clock = FakeClock()
        served = self.make(tmp_path, clock)
        chats = served.directory("alice")
        chats.set_auto_archive_days(1)
        chat = chats.create_chat().id
        task = asyncio.create_task(served.archive_untouched_periodically(interval_s=0.01))
        try:
            clock.advance(DAY_MS + 1)
            await until(lambda: chats.get_summary(chat).archived)
        finally:
            task.cancel()
        chats.close()
