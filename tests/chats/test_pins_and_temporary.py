"""Pins and temporary chats (issue 29, item 2), on both engines.

A pinned chat heads the sidebar in the "Pinned" group, newest pin first, live through the
directory's events; a temporary chat is in no list and no search, and is deleted and purged
once no window holds it (after the grace) or at the end of its lifetime, whichever is first.
"""

from __future__ import annotations

import pytest

from backend.chats import ChatDeleted, ChatPinned, Chats, ChatUnpinned, DirectoryChanged
from backend.chats.chat_records import COMPONENT, MIGRATIONS
from backend.chats.ids import ChatIds
from backend.chats.layout import DirectoryLayout
from backend.chats.pg_chat_records import PgChatRecordStore
from backend.config import PostgresLocation, StorageChoice
from backend.errors import ChatNotFoundError, InvalidIdError, InvalidInputError
from tests.chats.conftest import text_message
from tests.support.storage_engines import directory_scope

GRACE_S = 60
LIFETIME_S = 3600


def ids(summaries):
    return [summary.id for summary in summaries]


@pytest.fixture
def directory(tmp_path, clock):
    """A directory with a one-minute grace and a one-hour lifetime for temporary chats."""
    chats = Chats(
        tmp_path,
        "alice",
        clock=clock,
        soft_delete_window_s=3600,
        temporary_lifetime_s=LIFETIME_S,
        temporary_grace_s=GRACE_S,
    )
    yield chats
    chats.close()


class TestPins:
    def test_pinned_chats_head_the_sidebar_newest_pin_first_and_stay_put(self, directory, clock):
        first = directory.create_chat("first").id
        clock.advance()
        second = directory.create_chat("second").id
        clock.advance()
        third = directory.create_chat("third").id
        clock.advance()
        assert directory.pins.pin(first).pinned_at == clock.now
        clock.advance()
        directory.pins.pin(third)
        clock.advance()
        directory.record_chat_turn(first, "a reply does not move a pin")
        page = directory.sidebar_page()
        assert ids(page.pinned) == [third, first]
        # The list keeps every chat (its pages stay one cursor's); the sidebar shows each once.
        assert ids(page.chats) == [first, third, second]
        assert [c.pinned for c in page.chats] == [True, True, False]

    def test_unpinning_takes_a_chat_out_of_the_group(self, directory):
        chat_id = directory.create_chat().id
        directory.pins.pin(chat_id)
        summary = directory.pins.unpin(chat_id)
        assert not summary.pinned
        assert directory.sidebar_page().pinned == ()
        assert not directory.get_summary(chat_id).pinned

    def test_pin_and_unpin_are_idempotent_and_announced_once(self, directory, clock):
        seen = []
        directory.subscribe(seen.append)
        chat_id = directory.create_chat().id
        seen.clear()
        first = directory.pins.pin(chat_id)
        clock.advance()
        assert directory.pins.pin(chat_id).pinned_at == first.pinned_at
        directory.pins.unpin(chat_id)
        directory.pins.unpin(chat_id)
        assert [type(event) for event in seen] == [ChatPinned, ChatUnpinned]
        assert seen[0].chat.pinned_at == first.pinned_at

    def test_an_archived_pin_waits_in_the_archive_and_comes_back_with_its_chat(self, directory):
        chat_id = directory.create_chat().id
        directory.pins.pin(chat_id)
        directory.archive_chat(chat_id)
        assert directory.sidebar_page().pinned == ()
        directory.unarchive_chat(chat_id)
        assert ids(directory.sidebar_page().pinned) == [chat_id]

    def test_a_deleted_chat_leaves_the_group_and_a_recreated_id_starts_unpinned(
        self, directory, clock
    ):
        chat_id = directory.create_chat().id
        directory.pins.pin(chat_id)
        directory.delete_chat(chat_id)
        assert directory.sidebar_page().pinned == ()
        assert ids(directory.pins.pinned()) == []
        directory.sweep(now_ms=clock.advance(3600 * 1000 + 1))
        assert not directory.create_chat(chat_id=chat_id).pinned

    def test_unknown_deleted_and_temporary_chats_cannot_be_pinned(self, directory):
        with pytest.raises(InvalidIdError):
            directory.pins.pin("not-a-chat")
        gone = directory.create_chat().id
        directory.delete_chat(gone)
        with pytest.raises(ChatNotFoundError):
            directory.pins.pin(gone)
        temporary = directory.temporary.start().id
        with pytest.raises(InvalidInputError, match="temporary"):
            directory.pins.pin(temporary)
        assert not directory.get_summary(temporary).pinned

    def test_another_process_pin_reaches_this_one_as_a_change(self, tmp_path, directory):
        chat_id = directory.create_chat().id
        seen = []
        directory.subscribe(seen.append)
        with Chats(tmp_path, "alice") as other:
            other.pins.pin(chat_id)
        assert directory._watcher.poll() == [DirectoryChanged("alice")]
        assert ids(directory.sidebar_page().pinned) == [chat_id]


class TestOldDirectories:
    def test_an_old_directory_opens_and_gains_pins_and_temporary_chats(
        self, tmp_path, storage: StorageChoice
    ):
        """A directory written before the columns existed opens with every chat unpinned and
        lasting, and takes pins and temporary chats at once."""
        layout = DirectoryLayout(
            tmp_path, "alice", on_disk=not isinstance(storage, PostgresLocation)
        )
        layout.ensure_folders()
        with directory_scope(storage, layout.database_path.parent) as db:
            if isinstance(storage, PostgresLocation):
                db.migrate(COMPONENT, PgChatRecordStore.migrations[:1])
                key = ChatIds(PgChatRecordStore(db).id_key())  # writes the scope's id key
                insert = (
                    "INSERT INTO chats (scope, num, id, title, created_at, updated_at) "
                    "VALUES (?, 1, ?, 'old chat', 1, 2)"
                )
                params: tuple = (db.name, key.mint())
            else:
                db.migrate(COMPONENT, MIGRATIONS[:3])  # the schema before the columns
                row = db.query_one("SELECT value FROM directory_meta WHERE key = 'id_key'")
                key = ChatIds(bytes(row[0]))
                insert = (
                    "INSERT INTO chats (id, title, created_at, updated_at) "
                    "VALUES (?, 'old chat', 1, 2)"
                )
                params = (key.mint(),)
            with db.transaction():
                db.execute(insert, params)
        old_id = params[-1]
        with Chats(tmp_path, "alice") as chats:
            assert ids(chats.list_chats()) == [old_id]
            summary = chats.get_summary(old_id)
            assert summary.pinned_at is None and summary.expires_at is None
            chats.pins.pin(old_id)
            temporary = chats.temporary.start().id
            assert ids(chats.sidebar_page().pinned) == [old_id]
            assert temporary not in ids(chats.list_chats())


class TestTemporaryChats:
    def test_a_temporary_chat_is_in_no_list_and_no_title_search(self, directory, clock):
        kept = directory.create_chat("holiday plans").id
        summary = directory.temporary.start("holiday secrets")
        assert summary.temporary and summary.expires_at == clock.now + LIFETIME_S * 1000
        assert ids(directory.list_chats()) == [kept]
        assert ids(directory.sidebar_page(with_archived=True).chats) == [kept]
        assert ids(directory.search_chats("holiday")) == [kept]
        assert ids(directory.list_chats(search="holiday")) == [kept]
        # It is still a chat: it opens, and its row answers.
        assert directory.get_summary(summary.id).title == "holiday secrets"
        assert directory.get_chat(summary.id).id == summary.id

    def test_its_messages_are_never_searched(self, directory):
        ordinary = directory.create_chat().id
        temporary = directory.temporary.start().id
        directory.get_chat(ordinary).session.append_message(text_message("m1", "quokka sightings"))
        directory.get_chat(temporary).session.append_message(text_message("m2", "quokka secrets"))
        assert [hit.chat_id for hit in directory.search_messages("quokka")] == [ordinary]
        directory.repair_index(full=True)
        assert [hit.chat_id for hit in directory.search_messages("quokka")] == [ordinary]
        assert [hit.chat_id for hit in directory.search_messages_fanout("quokka")] == [ordinary]

    def test_it_is_gone_once_no_window_held_it_for_the_grace(self, directory, clock):
        seen = []
        directory.subscribe(seen.append)
        chat_id = directory.temporary.start().id
        directory.get_chat(chat_id).session.append_message(text_message("m1", "soon gone"))
        clock.advance(GRACE_S * 1000 - 1)
        assert directory.temporary.expire() == []
        clock.advance(1)
        assert directory.temporary.expire() == [chat_id]
        assert ChatDeleted("alice", chat_id) in seen
        with pytest.raises(ChatNotFoundError):
            directory.get_summary(chat_id)
        with pytest.raises(ChatNotFoundError):
            directory.restore_chat(chat_id)  # purged at once: no undo window
        generation = 1
        assert not directory._files.exists(chat_id, generation)
        assert directory.temporary.count() == 0

    def test_a_held_chat_outlives_the_grace_but_not_its_lifetime(self, directory, clock):
        chat_id = directory.temporary.start().id
        for _ in range(LIFETIME_S // (GRACE_S // 2) - 1):
            clock.advance(GRACE_S // 2 * 1000)
            directory.temporary.hold([chat_id])
            assert directory.sweep() == [], "a window holds it"
        clock.advance(GRACE_S // 2 * 1000)
        directory.temporary.hold([chat_id])
        assert directory.sweep() == [chat_id], "its lifetime ended, held or not"

    def test_holding_ordinary_chats_writes_nothing(self, directory, clock):
        ordinary = directory.create_chat().id
        temporary = directory.temporary.start().id
        before = directory.database.stats.rows_written
        assert directory.temporary.hold([ordinary, "not-a-chat"]) == 0
        clock.advance(GRACE_S // 2 * 1000)
        assert directory.temporary.hold([temporary]) == 0  # held half a grace more still
        assert directory.database.stats.rows_written == before
        clock.advance(1)
        assert directory.temporary.hold([temporary, ordinary]) == 1

    def test_a_directory_opened_after_the_deadline_removes_it(self, tmp_path, clock):
        with Chats(tmp_path, "alice", clock=clock, temporary_grace_s=GRACE_S) as chats:
            chat_id = chats.temporary.start().id
        clock.advance(GRACE_S * 1000)
        with Chats(tmp_path, "alice", clock=clock) as chats, pytest.raises(ChatNotFoundError):
            chats.get_summary(chat_id)

    def test_lifetime_and_grace_must_be_positive(self, tmp_path):
        with pytest.raises(ValueError, match="positive"):
            Chats(tmp_path, "alice", temporary_grace_s=0)
