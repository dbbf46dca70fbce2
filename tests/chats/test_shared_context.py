"""Shared memory blocks and searchable entries (RFC edge cases 6, 22)."""

import re
import threading

import pytest

from backend.chats import Chats


class TestBlocks:
    def test_a_missing_block_reads_as_none(self, chats):
        assert chats.get_shared_context("user_memory") is None

    def test_set_replaces_and_get_reads_it_back(self, chats):
        chats.set_shared_context("user_memory", "likes tea")
        chats.set_shared_context("user_memory", "likes coffee")
        assert chats.get_shared_context("user_memory") == "likes coffee"

    def test_append_creates_then_extends_a_block(self, chats):
        chats.append_shared_context("facts", "- a\n")
        chats.append_shared_context("facts", "- b\n")
        assert chats.get_shared_context("facts") == "- a\n- b\n"

    def test_all_blocks_are_listed_by_label(self, chats):
        assert chats.list_shared_contexts() == []
        chats.set_shared_context("zeta", "z")
        chats.append_shared_context("alpha", "a")
        chats.index_shared("notes", "k", "entries are not blocks")
        assert chats.list_shared_contexts() == [("alpha", "a"), ("zeta", "z")]

    def test_labels_are_independent(self, chats):
        chats.set_shared_context("a", "1")
        chats.set_shared_context("b", "2")
        assert (chats.get_shared_context("a"), chats.get_shared_context("b")) == ("1", "2")

    @pytest.mark.parametrize("label", ["", "  "])
    def test_a_blank_label_is_rejected(self, chats, label):
        with pytest.raises(ValueError):
            chats.set_shared_context(label, "x")
        with pytest.raises(ValueError):
            chats.get_shared_context(label)

    def test_non_string_content_is_a_type_error(self, chats):
        with pytest.raises(TypeError):
            chats.set_shared_context("m", {"not": "text"})
        with pytest.raises(TypeError):
            chats.append_shared_context("m", 3)

    def test_blocks_survive_reopening(self, tmp_path):
        with Chats(tmp_path, "alice") as chats:
            chats.append_shared_context("m", "kept")
        with Chats(tmp_path, "alice") as chats:
            assert chats.get_shared_context("m") == "kept"


class TestConcurrentAppends:
    """RFC edge case 6: no lost updates from many writers."""

    def test_appends_from_many_threads_all_land(self, chats):
        def worker(n):
            for i in range(50):
                chats.append_shared_context("m", f"<{n}:{i}>")

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        content = chats.get_shared_context("m")
        assert content.count("<") == 400
        assert all(f"<{n}:{i}>" in content for n in range(8) for i in range(50))

    def test_appends_through_two_connections_to_one_directory_all_land(self, tmp_path):
        first = Chats(tmp_path, "alice")
        second = Chats(tmp_path, "alice")
        try:

            def worker(directory, tag):
                for i in range(100):
                    directory.append_shared_context("m", f"<{tag}{i}>")

            threads = [
                threading.Thread(target=worker, args=(first, "a")),
                threading.Thread(target=worker, args=(second, "b")),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert first.get_shared_context("m").count("<") == 200
        finally:
            first.close()
            second.close()


class TestSearchableEntries:
    def test_search_returns_the_best_matching_entries_joined(self, chats):
        chats.index_shared("notes", "k1", "the user likes green tea")
        chats.index_shared("notes", "k2", "the user lives in Lisbon")
        chats.index_shared("notes", "k3", "green tea in Lisbon is great")
        found = chats.search_shared("notes", "green tea Lisbon")
        assert found.split("\n\n")[0] == "green tea in Lisbon is great"
        assert set(found.split("\n\n")) == {
            "the user likes green tea",
            "the user lives in Lisbon",
            "green tea in Lisbon is great",
        }

    def test_search_with_no_match_or_a_blank_query_is_none(self, chats):
        chats.index_shared("notes", "k1", "tea")
        assert chats.search_shared("notes", "coffee") is None
        assert chats.search_shared("notes", "   ") is None

    def test_indexing_a_key_again_replaces_its_entry(self, chats):
        chats.index_shared("notes", "k1", "old fact")
        chats.index_shared("notes", "k1", "new fact")
        assert chats.search_shared("notes", "old") is None
        assert chats.search_shared("notes", "fact") == "new fact"

    def test_entries_are_scoped_to_their_label(self, chats):
        chats.index_shared("a", "k", "apples")
        assert chats.search_shared("b", "apples") is None

    @pytest.mark.parametrize(
        ("query", "finds"),
        [
            ('"', False),
            ("a OR", True),
            ("NEAR(", False),
            ("*", False),
            ("label:x", True),
            ("\x00", False),
            ("nothing OR label", True),
        ],
    )
    def test_any_query_is_safe(self, chats, query, finds):
        chats.index_shared("notes", "k", "a OR label x")
        found = chats.search_shared("notes", query)
        # Safe: the stored entry or None, never syntax; an entry is found only when it holds
        # one of the query's words.
        assert found == ("a OR label x" if finds else None)
        query_words = set(re.findall(r"\w+", query.lower()))
        assert (found is not None) == bool(query_words & {"a", "or", "label", "x"})

    def test_a_blank_key_is_rejected(self, chats):
        with pytest.raises(ValueError):
            chats.index_shared("notes", " ", "x")
