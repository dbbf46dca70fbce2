"""A chat's life: lazy file, soft delete, restore, purge after the window, re-creation."""

import os
import sqlite3

import pytest

from backend.chats import Chats
from backend.errors import ChatNotFoundError, ChatsError, InvalidIdError, StorageError
from backend.sessions import Sessions
from tests.chats.conftest import FakeClock, text_message

# backend.storage lets sqlite3.ProgrammingError through for a closed connection.
CLOSED_FILE_ERRORS = (StorageError, sqlite3.ProgrammingError)
HOSTILE = ["../x", "/etc/passwd", "a/b", "..\\x", "x\x00y", "", "alice", "../bob/chats/x"]
WINDOW_S = 3600


def files_under(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


class TestGetChat:
    def test_a_live_chat_gives_a_handle_with_id_generation_and_session(self, chats):
        summary = chats.create_chat()
        chat = chats.get_chat(summary.id)
        assert (chat.id, chat.generation, chat.live) == (summary.id, 1, True)
        chat.session.append_message(text_message("m1", "hello"))
        assert [m["id"] for m in chat.session.get_history()] == ["m1"]

    def test_the_same_chat_reopened_sees_the_same_conversation(self, tmp_path):
        with Chats(tmp_path, "alice") as chats:
            chat_id = chats.create_chat().id
            chats.get_chat(chat_id).session.append_message(text_message("m1", "hello"))
        with Chats(tmp_path, "alice") as chats:
            assert chats.get_chat(chat_id).session.get_message("m1") is not None

    @pytest.mark.parametrize("hostile", HOSTILE)
    def test_a_hostile_id_is_a_value_error_and_creates_nothing(self, chats, tmp_path, hostile):
        before = files_under(tmp_path)
        for call in (
            lambda: chats.get_chat(hostile),
            lambda: chats.delete_chat(hostile),
            lambda: chats.rename_chat(hostile, "x"),
            lambda: chats.record_chat_turn(hostile, "x"),
            lambda: chats.restore_chat(hostile),
            lambda: chats.get_summary(hostile),
            lambda: chats.create_chat(chat_id=hostile),
        ):
            with pytest.raises(ValueError):
                call()
        assert files_under(tmp_path) == before

    def test_an_id_of_another_directory_is_a_value_error(self, chats, tmp_path):
        with Chats(tmp_path, "bob") as bob:
            foreign = bob.create_chat().id
            bob.get_chat(foreign).session.append_message(text_message("m", "secret"))
        with pytest.raises(InvalidIdError):
            chats.get_chat(foreign)

    def test_a_well_formed_id_that_is_not_live_is_a_key_error(self, chats):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        with pytest.raises(KeyError):
            chats.get_chat(summary.id)
        with pytest.raises(ChatNotFoundError) as info:
            chats.get_summary(summary.id)
        assert info.value.chat_id == summary.id

    def test_a_stale_generation_is_a_key_error(self, chats):
        summary = chats.create_chat()
        with pytest.raises(KeyError):
            chats.get_chat(summary.id, generation=2)
        assert chats.get_chat(summary.id, generation=1).id == summary.id


class TestRowWithoutChildDatabase:
    """RFC edge case 1: a directory row whose chat was never spoken to costs nothing."""

    def test_a_generation_has_storage_only_once_its_session_is_first_used(self, chats):
        """The engine-neutral fact: a file on SQLite, a row of the directory on PostgreSQL."""
        chat = chats.get_chat(chats.create_chat().id)
        assert chats._files.stored() == []
        chat.reader  # noqa: B018 - reading a never-written chat creates nothing
        assert not chats._files.exists(chat.id, chat.generation)
        chat.session  # noqa: B018 - first use opens the conversation
        assert chats._files.stored() == [(chat.id, chat.generation)]

    def test_the_purge_removes_the_generation_s_storage(self, chats, clock):
        summary = chats.create_chat()
        chats.get_chat(summary.id).session.append_message(text_message("m1", "bye"))
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000)
        assert chats.sweep() == [summary.id]
        assert chats._files.stored() == []

    @pytest.mark.sqlite_only
    def test_the_file_is_created_only_when_the_session_is_first_used(self, chats):
        summary = chats.create_chat()
        chat = chats.get_chat(summary.id)
        path = chats.layout.chat_path(chat.id, chat.generation)
        assert not path.exists()
        chat.session  # noqa: B018 - first use opens the conversation
        assert path.exists()

    @pytest.mark.sqlite_only
    def test_searching_and_deleting_a_never_written_chat_work_and_create_no_file(self, chats):
        summary = chats.create_chat("never used")
        assert chats.search_messages("anything") == []
        assert chats.search_messages_fanout("anything") == []
        chats.delete_chat(summary.id)
        chats.sweep(now_ms=chats._clock() + WINDOW_S * 1000)
        assert list(chats.layout.chats_folder.iterdir()) == []

    @pytest.mark.sqlite_only
    def test_its_reader_reads_as_an_empty_conversation_and_creates_no_file(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        reader = chat.reader
        assert reader.get_history() == []
        assert reader.get_latest_leaf() is None
        assert reader.get_branches(None) == []
        assert not chats.layout.chat_path(chat.id, chat.generation).exists()

    def test_its_reader_refuses_writes_instead_of_losing_them(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        with pytest.raises(ChatsError, match="never written"):
            chat.reader.append_message(text_message("m1", "lost?"))
        assert chat.session.get_history() == []

    def test_once_written_its_reader_is_the_chat_s_own_session(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m1", "kept"))
        assert [m["id"] for m in chat.reader.get_history()] == ["m1"]

    def test_the_reader_of_a_deleted_chat_is_a_key_error(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chats.delete_chat(chat.id)
        with pytest.raises(KeyError):
            chat.reader  # noqa: B018


class TestSoftDelete:
    def test_a_deleted_chat_disappears_from_list_title_search_and_message_search(self, chats):
        summary = chats.create_chat("Findable")
        chats.get_chat(summary.id).session.append_message(text_message("m1", "needle"))
        assert chats.search_messages("needle")
        chats.delete_chat(summary.id)
        assert chats.list_chats() == []
        assert chats.list_chats(search="findable") == []
        assert chats.search_chats("findable") == []
        assert chats.search_messages("needle") == []
        assert chats.search_messages_fanout("needle") == []

    def test_delete_is_idempotent(self, chats):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        chats.delete_chat(summary.id)
        assert chats.list_chats() == []

    @pytest.mark.sqlite_only
    def test_the_file_stays_within_the_window(self, chats, clock):
        summary = chats.create_chat()
        chat = chats.get_chat(summary.id)
        chat.session.append_message(text_message("m1", "keep me"))
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000 - 1)
        assert chats.sweep() == []
        assert chats.layout.chat_path(chat.id, 1).exists()

    @pytest.mark.sqlite_only
    def test_the_file_is_purged_once_the_window_has_passed(self, chats, clock):
        summary = chats.create_chat()
        chats.get_chat(summary.id).session.append_message(text_message("m1", "bye"))
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000)
        assert chats.sweep() == [summary.id]
        assert list(chats.layout.chats_folder.iterdir()) == []
        assert chats.sweep() == []

    @pytest.mark.sqlite_only
    def test_the_sweep_runs_lazily_when_the_directory_is_next_opened(self, tmp_path):
        clock = FakeClock()
        with Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=WINDOW_S) as chats:
            chat_id = chats.create_chat().id
            chats.get_chat(chat_id).session.append_message(text_message("m1", "x"))
            chats.delete_chat(chat_id)
        clock.advance(WINDOW_S * 1000)
        with Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=WINDOW_S) as chats:
            assert list(chats.layout.chats_folder.iterdir()) == []

    def test_restore_within_the_window_brings_back_the_same_conversation(self, chats):
        summary = chats.create_chat("Back")
        chats.get_chat(summary.id).session.append_message(text_message("m1", "needle"))
        chats.delete_chat(summary.id)
        restored = chats.restore_chat(summary.id)
        assert restored == summary
        assert chats.list_chats() == [summary]
        assert [h.message_id for h in chats.search_messages("needle")] == ["m1"]
        assert chats.get_chat(summary.id).generation == 1

    def test_restore_after_the_purge_is_not_found(self, chats, clock):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000)
        chats.sweep()
        with pytest.raises(KeyError):
            chats.restore_chat(summary.id)

    def test_restoring_a_live_chat_changes_nothing(self, chats):
        summary = chats.create_chat()
        assert chats.restore_chat(summary.id) == summary


class TestDeleteDuringUse:
    """RFC edge case 3: deleting the chat another tab is using."""

    def test_an_in_flight_write_still_lands_but_stays_invisible(self, chats):
        summary = chats.create_chat()
        chat = chats.get_chat(summary.id)
        chat.session.append_message(text_message("m1", "first"))
        chats.delete_chat(summary.id)
        assert not chat.live
        chat.session.append_message(text_message("m2", "streamed after delete"))
        assert chat.session.get_message("m2") is not None
        assert chats.search_messages("streamed") == []

    def test_a_new_handle_cannot_be_opened_after_the_delete(self, chats):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        with pytest.raises(KeyError):
            chats.get_chat(summary.id)

    def test_after_the_purge_a_stale_handle_can_no_longer_write(self, chats, clock):
        summary = chats.create_chat()
        chat = chats.get_chat(summary.id)
        session = chat.session
        session.append_message(text_message("m1", "x"))
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000)
        chats.sweep()
        with pytest.raises(KeyError):
            chat.session  # noqa: B018
        with pytest.raises(ChatNotFoundError):  # "gone", as the UI understands it
            session.append_message(text_message("m2", "too late"))
        assert chats._files.stored() == []


class TestCrashMidPurge:
    def test_storage_a_crash_left_after_the_purge_commit_goes_at_the_next_open(
        self, tmp_path, monkeypatch
    ):
        """On either engine: a file on SQLite, the conversation's rows on PostgreSQL."""
        from backend.chats.purge import ChatPurger

        clock = FakeClock()
        with Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=0) as chats:
            purged, recreated = chats.create_chat().id, chats.create_chat().id
            for chat_id in (purged, recreated):
                chats.get_chat(chat_id).session.append_message(text_message("m", "left over"))
            with monkeypatch.context() as crash:  # the process dies between commit and removal
                crash.setattr(ChatPurger, "remove_files", lambda self, record: None)
                chats.delete_chat(purged)
                chats.delete_chat(recreated)
                chats.create_chat(chat_id=recreated)
            assert sorted(chats._files.stored()) == sorted([(purged, 1), (recreated, 1)])
        with Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=0) as chats:
            assert chats._files.stored() == []
            assert chats.get_chat(recreated).reader.get_history() == []

    @pytest.mark.sqlite_only
    def test_files_of_purged_or_superseded_generations_are_removed_on_open(self, tmp_path):
        clock = FakeClock()
        with Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=0) as chats:
            purged = chats.create_chat().id
            recreated = chats.create_chat().id
            chats.delete_chat(purged)
            chats.delete_chat(recreated)
            chats.create_chat(chat_id=recreated)
            layout = chats.layout
        # What a crash between the commit and the file removal would leave behind:
        leftovers = [layout.chat_path(purged, 1), layout.chat_path(recreated, 1)]
        unknown = layout.chat_path("0000000000000000-000000", 1)
        for path in [*leftovers, unknown]:
            with Sessions(path) as sessions:
                sessions.session("").append_message(text_message("m", "left over"))
        with Chats(tmp_path, "alice", clock=clock, soft_delete_window_s=0):
            assert [p.exists() for p in leftovers] == [False, False]
            assert unknown.exists()  # not ours to judge (RFC edge case 2)

    def test_a_restore_racing_the_sweep_never_loses_the_files(self, chats, clock, monkeypatch):
        summary = chats.create_chat()
        chats.get_chat(summary.id).session.append_message(text_message("m", "keep"))
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000)
        due = chats._records.due_for_purge(clock.now, 10)
        chats.restore_chat(summary.id)  # lands between the sweep's read and its purge
        monkeypatch.setattr(chats._records, "due_for_purge", lambda cutoff, limit: due)
        assert chats.sweep() == []
        assert chats.get_chat(summary.id).session.get_message("m") is not None


class TestRecreation:
    """RFC edge case 4: re-creating an id starts fresh under a new generation."""

    def test_re_creating_a_deleted_id_starts_an_empty_new_generation(self, chats, clock):
        summary = chats.create_chat("old")
        old = chats.get_chat(summary.id)
        old.session.append_message(text_message("m1", "old needle"))
        chats.delete_chat(summary.id)
        clock.advance()
        fresh = chats.create_chat("new", chat_id=summary.id)
        assert (fresh.id, fresh.title, fresh.created_at) == (summary.id, "new", clock.now)
        chat = chats.get_chat(summary.id)
        assert chat.generation == 2
        assert chat.session.get_history() == []
        assert chats.search_messages("needle") == []
        assert not chats.layout.chat_path(summary.id, 1).exists()

    def test_a_stale_handle_cannot_reach_the_new_generation(self, chats):
        summary = chats.create_chat()
        stale = chats.get_chat(summary.id)
        chats.delete_chat(summary.id)
        chats.create_chat(chat_id=summary.id)
        assert not stale.live
        with pytest.raises(KeyError):
            stale.session  # noqa: B018
        with pytest.raises(KeyError):
            chats.get_chat(summary.id, generation=stale.generation)

    def test_re_creating_a_purged_id_also_moves_the_generation_forward(self, chats, clock):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        clock.advance(WINDOW_S * 1000)
        chats.sweep()
        chats.create_chat(chat_id=summary.id)
        assert chats.get_chat(summary.id).generation == 2


class TestOpenChatFiles:
    def test_the_cache_closes_unused_chats_beyond_its_capacity(self, tmp_path):
        with Chats(tmp_path, "alice", max_open_chats=2) as chats:
            ids = [chats.create_chat().id for _ in range(4)]
            for chat_id in ids:
                chats.get_chat(chat_id).session.append_message(text_message("m", chat_id))
            assert len(chats._open) <= 2
            for chat_id in ids:
                assert chats.get_chat(chat_id).session.get_message("m") is not None

    def test_a_chat_whose_handle_is_alive_is_never_closed_under_it(self, tmp_path):
        with Chats(tmp_path, "alice", max_open_chats=1) as chats:
            held = chats.get_chat(chats.create_chat().id)
            session = held.session
            for _ in range(3):
                chats.get_chat(chats.create_chat().id).session  # noqa: B018
            session.append_message(text_message("m", "still open"))
            assert session.get_message("m") is not None

    def test_close_is_idempotent_and_closes_every_file(self, tmp_path):
        chats = Chats(tmp_path, "alice")
        chat = chats.get_chat(chats.create_chat().id)
        session = chat.session
        chats.close()
        chats.close()
        assert chats.closed
        with pytest.raises(CLOSED_FILE_ERRORS):
            session.append_message(text_message("m", "x"))
        with pytest.raises(StorageError):
            chats.list_chats()

    def test_settings_choose_the_root_the_user_and_the_window(self, tmp_path):
        from backend.config import POSTGRES_ROOT, Settings

        settings = Settings.from_env(
            {
                "CHATS_DATA_DIR": str(tmp_path),
                "CHATS_USER": "carol",
                "CHATS_STORAGE": os.environ["CHATS_STORAGE"],
            }
        )
        # On PostgreSQL the root is the fixed logical one every node names alike.
        root = tmp_path if settings.storage == "sqlite" else POSTGRES_ROOT
        with Chats.from_settings(settings) as chats:
            assert chats.directory_id == "carol"
            assert chats.layout.database_path == root / "carol" / "directory.sqlite"

    @pytest.mark.sqlite_only
    def test_a_directory_layout_is_readable_on_disk(self, tmp_path):
        with Chats(tmp_path, "alice") as chats:
            chat = chats.get_chat(chats.create_chat().id)
            chat.session.append_message(text_message("m", "x"))
            names = {p.name for p in (tmp_path / "alice").iterdir()}
            assert "directory.sqlite" in names and "chats" in names
            assert os.listdir(tmp_path / "alice" / "chats")[0].startswith(chat.id)
