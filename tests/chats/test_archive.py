"""Archive: archived chats leave the main list for their own, stay searchable, and a policy
archives chats untouched for N days."""

from __future__ import annotations

import pytest

from backend.chats import (
    MAX_AUTO_ARCHIVE_DAYS,
    ChatArchived,
    Chats,
    ChatUnarchived,
)
from backend.chats.archive_policy import DAY_MS
from backend.chats.chat_records import COMPONENT, MIGRATIONS
from backend.chats.ids import ChatIds
from backend.chats.layout import DirectoryLayout
from backend.errors import ChatNotFoundError, InvalidInputError
from backend.storage import Database
from tests.chats.conftest import FakeClock, text_message


def ids(summaries):
    return [summary.id for summary in summaries]


class TestArchiving:
    def test_an_archived_chat_leaves_the_main_list_and_is_listed_as_archived(self, chats, clock):
        kept = chats.create_chat("kept").id
        clock.advance()
        old = chats.create_chat("old").id
        summary = chats.archive_chat(old)
        assert summary.archived and summary.archived_at == clock.now
        assert ids(chats.list_chats()) == [kept]
        assert ids(chats.list_chats(archived=True)) == [old]

    def test_unarchiving_brings_the_chat_back_to_the_main_list_in_its_place(self, chats, clock):
        first = chats.create_chat("first").id
        clock.advance()
        second = chats.create_chat("second").id
        chats.archive_chat(first)
        clock.advance(1000)
        back = chats.unarchive_chat(first)
        assert not back.archived
        assert ids(chats.list_chats()) == [second, first]  # updated_at is not a touch
        assert chats.list_chats(archived=True) == []

    def test_archive_and_unarchive_are_idempotent_and_announced_once(self, chats, clock, events):
        chat_id = chats.create_chat().id
        events.clear()
        first = chats.archive_chat(chat_id)
        clock.advance()
        assert chats.archive_chat(chat_id).archived_at == first.archived_at
        chats.unarchive_chat(chat_id)
        chats.unarchive_chat(chat_id)
        assert [type(event) for event in events] == [ChatArchived, ChatUnarchived]
        assert events[0].chat.archived_at == first.archived_at
        assert events[1].chat.archived_at is None

    def test_the_archived_list_pages_by_cursor_and_filters_by_title(self, chats, clock):
        archived = []
        for n in range(5):
            clock.advance()
            chat_id = chats.create_chat(f"trip {n}" if n % 2 else f"notes {n}").id
            chats.archive_chat(chat_id)
            archived.insert(0, chat_id)
        chats.create_chat("trip unarchived")
        page = chats.list_chats(archived=True, limit=2)
        rest = chats.list_chats(archived=True, limit=10, before=page[-1].cursor)
        assert ids(page + rest) == archived
        found = chats.list_chats(archived=True, search="tri")
        assert [s.title for s in found] == ["trip 3", "trip 1"]

    def test_an_archived_chat_is_still_found_by_title_and_message_search(self, chats):
        chat = chats.get_chat(chats.create_chat("Lisbon trip").id)
        chat.session.append_message(text_message("m1", "the tram to Belém"))
        chats.archive_chat(chat.id)
        (title_hit,) = chats.search_chats("lisbon")
        assert title_hit.id == chat.id and title_hit.archived
        (message_hit,) = chats.search_messages("tram")
        assert message_hit.chat_id == chat.id
        assert chats.get_summary(chat.id).archived

    def test_an_archived_chat_still_opens_and_records_turns(self, chats):
        chat_id = chats.create_chat().id
        chats.archive_chat(chat_id)
        assert chats.get_chat(chat_id).id == chat_id
        turned = chats.record_chat_turn(chat_id, "a reply")
        assert turned.archived and ids(chats.list_chats(archived=True)) == [chat_id]

    def test_a_deleted_archived_chat_leaves_both_lists_and_comes_back_archived(self, chats):
        chat_id = chats.create_chat().id
        chats.archive_chat(chat_id)
        chats.delete_chat(chat_id)
        assert chats.list_chats(archived=True) == [] and chats.list_chats() == []
        assert chats.restore_chat(chat_id).archived
        assert ids(chats.list_chats(archived=True)) == [chat_id]

    def test_a_recreated_id_starts_unarchived(self, chats, clock):
        chat_id = chats.create_chat().id
        chats.archive_chat(chat_id)
        chats.delete_chat(chat_id)
        clock.advance(3_600_001)
        chats.sweep()
        assert not chats.create_chat(chat_id=chat_id).archived
        assert ids(chats.list_chats()) == [chat_id]

    def test_archiving_an_unknown_or_deleted_chat_is_not_found(self, chats):
        chat_id = chats.create_chat().id
        chats.delete_chat(chat_id)
        with pytest.raises(ChatNotFoundError):
            chats.archive_chat(chat_id)
        with pytest.raises(ChatNotFoundError):
            chats.unarchive_chat(chat_id)

    def test_archived_must_be_a_bool(self, chats):
        with pytest.raises(TypeError):
            chats.list_chats(archived="yes")


class TestAutoArchivePolicy:
    def test_the_policy_is_off_by_default_and_archives_nothing(self, chats, clock):
        chats.create_chat()
        clock.advance(10_000 * DAY_MS)
        assert chats.auto_archive_days() is None
        assert chats.archive_untouched() == []
        assert len(chats.list_chats()) == 1

    def test_chats_untouched_for_n_days_are_archived_and_recent_ones_kept(self, chats, clock):
        stale = chats.create_chat("stale").id
        clock.advance(20 * DAY_MS)
        fresh = chats.create_chat("fresh").id
        replied = chats.create_chat("replied").id
        clock.advance(5 * DAY_MS)
        chats.record_chat_turn(replied, "still talking")
        assert chats.set_auto_archive_days(30) == []
        clock.advance(5 * DAY_MS + 1)  # stale: 30 days and 1 ms; fresh: 10 days
        assert chats.archive_untouched() == [stale]
        assert set(ids(chats.list_chats())) == {fresh, replied}
        assert chats.get_summary(stale).archived_at == clock.now

    def test_setting_the_policy_applies_it_at_once(self, chats, clock):
        chat_id = chats.create_chat().id
        clock.advance(8 * DAY_MS)
        assert chats.set_auto_archive_days(7) == [chat_id]
        assert chats.auto_archive_days() == 7

    def test_an_unarchived_chat_is_not_archived_again_until_it_is_untouched_again(
        self, chats, clock
    ):
        chat_id = chats.create_chat().id
        clock.advance(8 * DAY_MS)
        chats.set_auto_archive_days(7)
        chats.unarchive_chat(chat_id)
        clock.advance(6 * DAY_MS)
        assert chats.archive_untouched() == []
        clock.advance(1 * DAY_MS + 1)
        assert chats.archive_untouched() == [chat_id]

    def test_the_policy_runs_when_the_directory_opens_and_persists(self, tmp_path):
        clock = FakeClock()
        with Chats(tmp_path, "alice", clock=clock) as chats:
            chat_id = chats.create_chat().id
            chats.set_auto_archive_days(3)
        clock.advance(3 * DAY_MS + 1)
        with Chats(tmp_path, "alice", clock=clock) as chats:
            assert chats.auto_archive_days() == 3
            assert ids(chats.list_chats(archived=True)) == [chat_id]

    def test_turning_the_policy_off_stops_it(self, chats, clock):
        chats.set_auto_archive_days(1)
        chats.set_auto_archive_days(None)
        chats.create_chat()
        clock.advance(5 * DAY_MS)
        assert chats.auto_archive_days() is None
        assert chats.archive_untouched() == []

    def test_a_pass_archives_more_chats_than_one_batch(self, chats, clock):
        made = {chats.create_chat().id for _ in range(230)}
        clock.advance(2 * DAY_MS)
        assert set(chats.set_auto_archive_days(1)) == made
        assert chats.list_chats() == []

    @pytest.mark.parametrize("days", [0, -1, MAX_AUTO_ARCHIVE_DAYS + 1, 1.5, "7", True])
    def test_a_bad_number_of_days_is_refused_and_nothing_is_saved(self, chats, days):
        chats.set_auto_archive_days(14)
        with pytest.raises(InvalidInputError):
            chats.set_auto_archive_days(days)
        assert chats.auto_archive_days() == 14


class TestArchiveMigration:
    @pytest.mark.sqlite_only  # a directory.sqlite file from before the migration
    def test_a_directory_made_before_archive_opens_with_its_chats_listed(self, tmp_path):
        layout = DirectoryLayout(tmp_path, "alice")
        layout.ensure_folders()
        database = Database(layout.database_path)
        database.migrate(COMPONENT, MIGRATIONS[:2])  # the schema before _m003_archive
        key = database.query_one("SELECT value FROM directory_meta WHERE key = 'id_key'")[0]
        chat_id = ChatIds(bytes(key)).mint()
        with database.transaction():
            (num,) = database.query_one(
                "INSERT INTO chats (id, title, created_at, updated_at) "
                "VALUES (?, 'old chat', 1, 2) RETURNING num",
                (chat_id,),
            )
            database.execute(
                "INSERT INTO chat_titles (rowid, title) VALUES (?, 'old chat')", (num,)
            )
        database.close()

        with Chats(tmp_path, "alice") as chats:
            assert ids(chats.list_chats()) == [chat_id]
            assert not chats.get_summary(chat_id).archived
            chats.archive_chat(chat_id)
            assert chats.list_chats() == []
            assert ids(chats.list_chats(archived=True)) == [chat_id]
            assert chats.search_chats("old")[0].archived
