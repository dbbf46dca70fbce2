"""RemoteContextProvider / RemoteSearchProvider: reads fail soft, writes raise (RFC 9, 10)."""

import threading

import pytest

import backend.providers as providers
from backend.providers import RemoteContextProvider, RemoteSearchProvider
from tests.support.exports import assert_public_surface
from tests.support.threads import run_at_once


class MemoryRemote:
    """A remote with the directory's shared-context methods, recording calls."""

    def __init__(self) -> None:
        self.blocks: dict[str, str] = {}
        self.entries: dict[tuple[str, str], str] = {}
        self.calls: list[str] = []

    def get_shared_context(self, label):
        self.calls.append("get")
        return self.blocks.get(label)

    def set_shared_context(self, label, content):
        self.calls.append("set")
        self.blocks[label] = content

    def append_shared_context(self, label, delta):
        self.calls.append("append")
        self.blocks[label] = self.blocks.get(label, "") + delta

    def search_shared(self, label, query):
        self.calls.append("search")
        hits = [c for (lab, _), c in self.entries.items() if lab == label and query in c]
        return "\n\n".join(hits) or None

    def index_shared(self, label, key, content):
        self.calls.append("index")
        self.entries[(label, key)] = content


class NoAppendRemote:
    def __init__(self) -> None:
        self.blocks: dict[str, str] = {}

    def get_shared_context(self, label):
        return self.blocks.get(label)

    def set_shared_context(self, label, content):
        self.blocks[label] = content


class BrokenRemote:
    def __getattr__(self, name):
        def fail(*args):
            raise ConnectionError(f"{name}: remote unreachable")

        return fail


def test_the_module_exports_exactly_the_four_public_names():
    assert_public_surface(
        providers,
        {
            "RemoteContextEndpoint",
            "RemoteContextProvider",
            "RemoteSearchEndpoint",
            "RemoteSearchProvider",
        },
    )


class TestRemoteContextProvider:
    def test_init_uses_the_block_label_when_there_is_no_namespace(self):
        remote = MemoryRemote()
        provider = RemoteContextProvider(remote)
        provider.init("memory")
        provider.set("likes tea")
        assert remote.blocks == {"memory": "likes tea"}
        assert provider.get() == "likes tea"

    def test_a_namespace_overrides_the_block_label(self):
        remote = MemoryRemote()
        provider = RemoteContextProvider(remote, "user_memory")
        provider.init("memory")
        provider.set("x")
        assert remote.blocks == {"user_memory": "x"}

    def test_get_of_a_missing_block_is_none(self):
        provider = RemoteContextProvider(MemoryRemote(), "user_memory")
        assert provider.get() is None

    def test_append_uses_the_remote_append_without_reading(self):
        remote = MemoryRemote()
        provider = RemoteContextProvider(remote, "m")
        provider.append("a")
        provider.append("b")
        assert remote.blocks == {"m": "ab"}
        assert remote.calls == ["append", "append"]

    def test_append_falls_back_to_read_then_write_when_the_remote_cannot_append(self):
        remote = NoAppendRemote()
        provider = RemoteContextProvider(remote, "m")
        provider.append("a")
        provider.append("b")
        assert remote.blocks == {"m": "ab"}

    def test_an_unreachable_remote_reads_as_an_empty_memory(self):
        provider = RemoteContextProvider(BrokenRemote(), "m")
        assert provider.get() is None

    def test_a_failed_write_propagates(self):
        provider = RemoteContextProvider(BrokenRemote(), "m")
        with pytest.raises(ConnectionError):
            provider.set("x")
        with pytest.raises(ConnectionError):
            provider.append("x")

    def test_the_fallback_append_never_overwrites_after_a_failed_read(self):
        class ReadFails(NoAppendRemote):
            def get_shared_context(self, label):
                raise ConnectionError("read failed")

        remote = ReadFails()
        remote.blocks["m"] = "precious"
        with pytest.raises(ConnectionError):
            RemoteContextProvider(remote, "m").append("x")
        assert remote.blocks == {"m": "precious"}

    def test_concurrent_appends_through_providers_lose_nothing(self):
        lock = threading.Lock()

        class LockedRemote(MemoryRemote):
            def append_shared_context(self, label, delta):
                with lock:
                    super().append_shared_context(label, delta)

        remote = LockedRemote()

        def worker(n):
            provider = RemoteContextProvider(remote, "m")
            for i in range(200):
                provider.append(f"{n}:{i};")

        run_at_once(worker, range(4))
        assert len(remote.blocks["m"].split(";")) - 1 == 800


class TestRemoteSearchProvider:
    def test_set_indexes_an_entry_and_search_finds_it(self):
        remote = MemoryRemote()
        provider = RemoteSearchProvider(remote)
        provider.init("notes")
        provider.set("k1", "the user likes green tea")
        assert remote.entries == {("notes", "k1"): "the user likes green tea"}
        assert provider.search("green") == "the user likes green tea"

    def test_get_reads_the_block_of_the_label(self):
        remote = MemoryRemote()
        remote.blocks["notes"] = "summary"
        provider = RemoteSearchProvider(remote, "notes")
        assert provider.get() == "summary"

    def test_reads_fail_soft_and_writes_raise(self):
        provider = RemoteSearchProvider(BrokenRemote(), "notes")
        assert provider.get() is None
        assert provider.search("x") is None
        with pytest.raises(ConnectionError):
            provider.set("k", "v")

    def test_both_providers_satisfy_the_endpoint_protocols_of_a_remote(self):
        assert isinstance(MemoryRemote(), providers.RemoteContextEndpoint)
        assert isinstance(MemoryRemote(), providers.RemoteSearchEndpoint)
        assert not isinstance(object(), providers.RemoteContextEndpoint)
