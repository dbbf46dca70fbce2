"""What an open directory holds while its person only looks (issue 14: memory per idle tab).

An open SQLite connection costs ~100 KB of heap even idle, and every person with a tab
connected holds their directory open: only what an idle person uses stays connected.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from backend.chats import Chats
from tests.support.sqlite_heap import sqlite_heap_bytes


def _handles_of(path: Path) -> int:
    """This process's open file descriptors on ``path`` (one per connection to the file)."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            if os.readlink(fd) == str(path):
                count += 1
    return count


class TestConnectionsOfAnIdleDirectory:
    def test_an_open_directory_holds_one_connection_to_its_file_until_it_searches(self, chats):
        database = chats.layout.database_path
        chat = chats.create_chat("Holiday plans")
        chats.list_chats()
        chats.get_chat(chat.id).reader.get_history()
        assert _handles_of(database) == 1

        assert [hit.id for hit in chats.search_chats("holiday")] == [chat.id]
        assert _handles_of(database) == 2  # the search reader, opened by the first search

    def test_closing_a_directory_that_never_searched_closes_its_one_connection(self, tmp_path):
        directory = Chats(tmp_path, "bob")
        directory.close()
        assert _handles_of(directory.layout.database_path) == 0


class TestMemoryOfAnOpenDirectory:
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
