"""The providers against a real directory: shared memory across chats, fail-soft when the
directory is gone (RFC edge cases 7-10)."""

import pytest

from backend.chats import Chats
from backend.errors import StorageError
from backend.providers import RemoteContextProvider, RemoteSearchProvider
from tests.support.threads import run_at_once


@pytest.fixture
def chats(tmp_path):
    directory = Chats(tmp_path, "alice")
    yield directory
    directory.close()


class TestSharedMemoryAcrossChats:
    def test_two_chats_see_one_memory_block(self, chats):
        in_chat_a = RemoteContextProvider(chats, "user_memory")
        in_chat_b = RemoteContextProvider(chats, "user_memory")
        in_chat_a.init("memory")
        in_chat_b.init("memory")
        in_chat_a.append("- likes tea\n")
        in_chat_b.append("- lives in Lisbon\n")
        assert in_chat_a.get() == in_chat_b.get() == "- likes tea\n- lives in Lisbon\n"

    def test_concurrent_appends_from_many_chats_lose_nothing(self, chats):
        def chat(n):
            provider = RemoteContextProvider(chats, "user_memory")
            for i in range(25):
                provider.append(f"[{n}.{i}]")

        run_at_once(chat, range(8))
        assert chats.get_shared_context("user_memory").count("[") == 200

    def test_a_search_provider_indexes_and_finds_entries(self, chats):
        provider = RemoteSearchProvider(chats)
        provider.init("notes")
        provider.set("k1", "the user likes green tea")
        assert provider.search("green") == "the user likes green tea"
        assert provider.search("coffee") is None
        assert provider.get() is None

    def test_a_stale_snapshot_is_refreshed_on_the_next_read(self, chats):
        """RFC edge case 7: a frozen prompt is stale; the next get() is fresh."""
        provider = RemoteContextProvider(chats, "m")
        chats.set_shared_context("m", "v1")
        frozen = provider.get()
        chats.set_shared_context("m", "v2")
        assert (frozen, provider.get()) == ("v1", "v2")


class TestParentGone:
    """RFC edge cases 9 and 10: the chat keeps working in a memoryless mode."""

    def test_reads_return_none_once_the_directory_is_closed(self, tmp_path):
        chats = Chats(tmp_path, "alice")
        chats.set_shared_context("m", "x")
        context = RemoteContextProvider(chats, "m")
        search = RemoteSearchProvider(chats, "m")
        chats.close()
        assert context.get() is None
        assert search.get() is None
        assert search.search("x") is None

    def test_writes_raise_once_the_directory_is_closed(self, tmp_path):
        chats = Chats(tmp_path, "alice")
        chats.close()
        with pytest.raises(StorageError):
            RemoteContextProvider(chats, "m").set("x")
        with pytest.raises(StorageError):
            RemoteContextProvider(chats, "m").append("x")
        with pytest.raises(StorageError):
            RemoteSearchProvider(chats, "m").set("k", "x")

    def test_a_deleted_directory_folder_reads_as_empty_memory(self, tmp_path):
        import shutil

        chats = Chats(tmp_path, "alice")
        chats.set_shared_context("m", "x")
        chats.close()
        shutil.rmtree(tmp_path / "alice")
        provider = RemoteContextProvider(chats, "m")
        assert provider.get() is None
