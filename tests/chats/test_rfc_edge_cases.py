"""RFC "multi-session via composition", edge cases that apply to the backend.

Where each case is specified:

====  ===========================================  ==========================================
 #    case                                          tests
====  ===========================================  ==========================================
 1    row without child database                    test_lifecycle.TestRowWithoutChildDatabase
 2    child database without row                    here
 3    delete during active use                      test_lifecycle.TestDeleteDuringUse
 4    soft-delete window, re-creation, generation   test_lifecycle.TestSoftDelete/TestRecreation
 5    rename broadcast                              test_chat_index.TestRename, test_events
 6    shared memory concurrency                     test_shared_context.TestConcurrentAppends
 7    stale frozen snapshot                         providers/test_providers_on_a_directory
 8    parent cold start                             here
 9    parent RPC failure                            providers/test_remote_providers
 10   parent deletion with live children            providers/test_providers_on_a_directory
 11   fan-out cost and global limit                 test_message_search.TestFanOut, bench
 12   the directory is the tenant boundary          here, test_ids_and_layout
 19   optimistic create                             here, test_events
 20   leak risk in broadcast summaries              test_chat_index.TestSummaries, test_events
====  ===========================================  ==========================================
"""

import pytest

from backend.chats import Chats
from backend.providers import RemoteContextProvider
from backend.sessions import Sessions
from tests.chats.conftest import text_message


class TestChildWithoutRow:
    """2: a chat file the directory has no row for is ignored, never adopted or served."""

    def test_an_orphan_chat_file_is_invisible(self, chats):
        chat_id = chats.create_chat().id
        orphan = chats.layout.chat_path("0000000000000000-000000", 1)
        with Sessions(orphan) as sessions:
            sessions.session("").append_message(text_message("m", "orphan words"))
        assert [c.id for c in chats.list_chats()] == [chat_id]
        assert chats.search_messages("orphan") == []
        assert chats.search_messages_fanout("orphan") == []
        assert chats.repair_index(full=True).documents_added == 0


class TestParentColdStart:
    """8: the first read after the directory (re)opens answers without any warm-up."""

    def test_a_fresh_directory_object_serves_memory_on_its_first_call(self, tmp_path):
        with Chats(tmp_path, "alice") as chats:
            chats.set_shared_context("user_memory", "likes tea")
        with Chats(tmp_path, "alice") as cold:
            provider = RemoteContextProvider(cold, "user_memory")
            assert provider.get() == "likes tea"


class TestTenantBoundary:
    """12: one directory per user; nothing crosses between directories."""

    def test_memory_chats_and_search_are_per_directory(self, tmp_path):
        with Chats(tmp_path, "alice") as alice, Chats(tmp_path, "bob") as bob:
            alice.set_shared_context("m", "alice's")
            chat = alice.get_chat(alice.create_chat().id)
            chat.session.append_message(text_message("m", "alice secret"))
            assert bob.get_shared_context("m") is None
            assert bob.list_chats() == []
            assert bob.search_messages("secret") == []
            with pytest.raises(ValueError):
                bob.get_chat(chat.id)


class TestOptimisticCreate:
    """19: create is authoritative: it returns the full summary and announces it."""

    def test_create_returns_what_every_tab_is_told(self, chats):
        seen = []
        chats.subscribe(seen.append)
        summary = chats.create_chat()
        assert [event.chat for event in seen] == [summary]
        assert chats.list_chats() == [summary]
