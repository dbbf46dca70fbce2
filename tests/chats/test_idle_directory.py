"""What an open directory holds while its person only looks (issue 14: memory per idle tab).

An open SQLite connection costs ~100 KB of heap even idle, and every person with a tab
connected holds their directory open: only what an idle person uses stays connected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.chats import Chats
from tests.support.descriptors import handles_of
from tests.support.sqlite_heap import sqlite_heap_bytes


class TestConnectionsOfAnIdleDirectory:
    @pytest.mark.sqlite_only
    def test_an_open_directory_holds_one_connection_to_its_file_until_it_searches(self, chats):
        database = chats.layout.database_path
        chat = chats.create_chat("Holiday plans")
        chats.list_chats()
        chats.get_chat(chat.id).reader.get_history()
        assert handles_of(database) == 1

        assert [hit.id for hit in chats.search_chats("holiday")] == [chat.id]
        assert handles_of(database) == 2  # the search reader, opened by the first search

    @pytest.mark.sqlite_only
    def test_closing_a_directory_that_never_searched_closes_its_one_connection(self, tmp_path):
        directory = Chats(tmp_path, "bob")
        directory.close()
        assert handles_of(directory.layout.database_path) == 0


class TestMemoryOfAnOpenDirectory:
    @pytest.mark.sqlite_only
    def test_opening_a_directory_keeps_none_of_the_pages_its_opening_passes_read(self, tmp_path):
        directory = Chats(tmp_path, "carol")
        for n in range(300):
            directory.create_chat(f"Chat {n}")
        directory.close()
        Chats(tmp_path, "warm-up").close()  # the process's one-time SQLite allocations

        before = sqlite_heap_bytes()
        directory = Chats(tmp_path, "carol")
        try:
            # Its one connection's own memory (schema, statements) and none of the ~85 KB of
            # pages the sweep, index repair and archive pass read (140 KB were kept).
            assert sqlite_heap_bytes() - before < 96 * 1024
        finally:
            directory.close()


class TestNeverWrittenChats:
    def test_every_directory_reads_its_new_chats_through_one_shared_empty_conversation(
        self, tmp_path, chats
    ):
        other = Chats(tmp_path, "bob")
        try:
            mine = chats.get_chat(chats.create_chat("Mine").id).reader
            theirs = other.get_chat(other.create_chat("Theirs").id).reader
            assert mine is theirs
            assert theirs.get_history() == []
        finally:
            other.close()

    def test_the_shared_empty_conversation_outlives_a_closed_directory(self, tmp_path, chats):
        other = Chats(tmp_path, "bob")
        other.get_chat(other.create_chat("Gone").id).reader.get_history()
        other.close()

        reader = chats.get_chat(chats.create_chat("Still readable").id).reader
        assert reader.get_history() == []


def _read(chats: Chats, chat_id: str) -> int:
    """Read a chat as a tab does, without keeping its handle: how many messages it has."""
    return len(chats.get_chat(chat_id).reader.get_history())


def _file_of(chats: Chats, chat_id: str) -> Path:
    return chats.layout.chat_path(chat_id, chats.get_chat(chat_id).generation)


def _written_chat(chats: Chats, title: str) -> str:
    chat_id = chats.create_chat(title).id
    chat = chats.get_chat(chat_id)
    for n in range(3):
        chat.session.append_message(
            {"id": f"m{n}", "role": "user", "parts": [{"type": "text", "text": f"note {n}"}]}
        )
    return chat_id


@pytest.mark.sqlite_only  # counts open file descriptors
class TestIdleChatFiles:
    """A person who read many chats keeps none of their files once nothing uses them: the
    per-directory cap (64 files, ~150 KB of heap and 3 descriptors each) is not a floor."""

    def test_files_nobody_holds_or_used_lately_are_closed_and_reopen_on_the_next_read(self, chats):
        ids = [_written_chat(chats, f"Chat {n}") for n in range(5)]
        for chat_id in ids:
            _read(chats, chat_id)
        paths = [_file_of(chats, chat_id) for chat_id in ids]
        assert [handles_of(path) for path in paths] == [1] * 5

        assert chats.close_idle_chats(0.0) == 5
        assert [handles_of(path) for path in paths] == [0] * 5
        assert [_read(chats, chat_id) for chat_id in ids] == [3] * 5
        assert [handles_of(path) for path in paths] == [1] * 5

    def test_a_file_used_within_the_idle_time_stays_open(self, chats):
        chat_id = _written_chat(chats, "Recent")
        _read(chats, chat_id)
        assert chats.close_idle_chats(3600.0) == 0
        assert handles_of(_file_of(chats, chat_id)) == 1

    def test_a_chat_whose_handle_is_held_stays_open_however_long_unused(self, chats):
        held = chats.get_chat(_written_chat(chats, "Held"))
        assert len(held.reader.get_history()) == 3
        other = _written_chat(chats, "Let go")
        _read(chats, other)

        assert chats.close_idle_chats(0.0) == 1
        assert handles_of(_file_of(chats, held.id)) == 1
        assert handles_of(_file_of(chats, other)) == 0
        held.session.append_message(
            {"id": "m9", "role": "user", "parts": [{"type": "text", "text": "still here"}]}
        )
        assert len(held.reader.get_history()) == 4

    @pytest.mark.sqlite_only
    def test_closing_them_gives_back_their_sqlite_memory(self, tmp_path):
        directory = Chats(tmp_path, "dave")
        ids = [_written_chat(directory, f"Chat {n}") for n in range(20)]
        directory.close()
        directory = Chats(tmp_path, "dave")
        try:
            before = sqlite_heap_bytes()
            for chat_id in ids:
                _read(directory, chat_id)
            held = sqlite_heap_bytes() - before
            assert held > 20 * 64 * 1024  # each open file holds its connection and pages
            directory.close_idle_chats(0.0)
            # What is left is the directory's own (its page cache read the chats' rows).
            assert sqlite_heap_bytes() - before < held / 10
        finally:
            directory.close()
