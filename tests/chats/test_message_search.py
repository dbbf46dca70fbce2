"""Cross-chat message search: the indexed path, kept current from each chat's change feed,
answers like the fan-out over the chats' own indexes."""

import re

import pytest

from backend.chats import SNIPPET_END, SNIPPET_START, split_snippet
from backend.chats.index import FLUSH_EVERY_EVENTS
from tests.chats.conftest import text_message


def hit_keys(hits):
    return sorted((hit.chat_id, hit.message_id) for hit in hits)


@pytest.fixture
def two_chats(chats):
    a = chats.get_chat(chats.create_chat("a").id)
    b = chats.get_chat(chats.create_chat("b").id)
    return a, b


class TestIndexedSearch:
    def test_a_phrase_is_found_in_every_chat_that_holds_it(self, chats, two_chats):
        a, b = two_chats
        a.session.append_message(text_message("a1", "the quick brown fox"))
        a.session.append_message(text_message("a2", "nothing here"))
        b.session.append_message(text_message("b1", "a brown fox again"))
        hits = chats.search_messages("brown fox")
        assert hit_keys(hits) == sorted([(a.id, "a1"), (b.id, "b1")])

    def test_hits_are_ordered_by_rank_best_first(self, chats, two_chats):
        a, b = two_chats
        a.session.append_message(text_message("a1", "tea " * 5))
        b.session.append_message(text_message("b1", "tea and a very long text " * 20))
        hits = chats.search_messages("tea")
        assert [h.rank for h in hits] == sorted(h.rank for h in hits)
        assert hits[0].message_id == "a1"

    def test_the_snippet_marks_the_match_with_the_documented_markers(self, chats, two_chats):
        a, _ = two_chats
        a.session.append_message(text_message("a1", "say <b>hello</b> world"))
        (hit,) = chats.search_messages("hello")
        assert f"{SNIPPET_START}hello{SNIPPET_END}" in hit.snippet
        assert ("hello", True) in split_snippet(hit.snippet)
        assert ("say <b>", False) in split_snippet(hit.snippet)

    def test_limit_is_global_across_chats(self, chats, two_chats):
        for chat in two_chats:
            for i in range(5):
                chat.session.append_message(text_message(f"m{i}", f"common word {i}"))
        assert len(chats.search_messages("common", limit=3)) == 3
        assert len(chats.search_messages("common", limit=100)) == 10

    @pytest.mark.parametrize(
        ("query", "finds"),
        [
            ("", False),
            ("   ", False),
            ('"', False),
            ("a OR b", True),
            ("NEAR(x", False),
            ("*", False),
            ("\x00", False),
            ("x:y", True),
            ("b x", True),
        ],
    )
    def test_any_user_query_is_safe(self, chats, two_chats, query, finds):
        two_chats[0].session.append_message(text_message("m", "a OR b x:y"))
        indexed = chats.search_messages(query)
        fanned = chats.search_messages_fanout(query)
        # Safe: the query is one literal phrase (operators are words), both paths agree, and
        # a hit's snippet highlights exactly the query's words.
        assert hit_keys(indexed) == hit_keys(fanned) == ([(two_chats[0].id, "m")] if finds else [])
        words = re.findall(r"\w+", query.lower())
        for hit in indexed + fanned:
            highlighted = " ".join(text for text, is_hit in split_snippet(hit.snippet) if is_hit)
            assert re.findall(r"\w+", highlighted.lower()) == words

    def test_a_huge_or_missing_limit_is_no_limit_or_the_default(self, chats, two_chats):
        for chat in two_chats:
            chat.session.append_message(text_message("m", "common word"))
        assert len(chats.search_messages("common", limit=2**63)) == 2
        assert len(chats.search_messages_fanout("common", limit=2**64)) == 2
        assert len(chats.search_messages("common", limit=None)) == 2

    def test_a_blank_query_finds_nothing(self, chats, two_chats):
        two_chats[0].session.append_message(text_message("m", "anything"))
        assert chats.search_messages("  ") == []

    def test_operators_are_matched_as_text(self, chats, two_chats):
        two_chats[0].session.append_message(text_message("m1", "cats OR dogs"))
        two_chats[0].session.append_message(text_message("m2", "cats only"))
        assert [h.message_id for h in chats.search_messages("cats OR dogs")] == ["m1"]

    def test_only_text_parts_are_searchable(self, chats, two_chats):
        message = {
            "id": "m",
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "text": "hidden thought"},
                {"type": "text", "text": "ok"},
            ],
        }
        two_chats[0].session.append_message(message)
        assert chats.search_messages("hidden") == []


class TestIndexFollowsTheChangeFeed:
    def test_an_update_replaces_the_old_text(self, chats, two_chats):
        a, _ = two_chats
        a.session.append_message(text_message("m", "a lazy dog"))
        assert chats.search_messages("lazy dog")
        a.session.update_message(text_message("m", "an alert cat"))
        assert chats.search_messages("lazy dog") == []
        assert [h.message_id for h in chats.search_messages("alert cat")] == ["m"]

    def test_a_deleted_message_is_no_longer_found(self, chats, two_chats):
        a, _ = two_chats
        a.session.append_message(text_message("m1", "keep this"))
        a.session.append_message(text_message("m2", "drop this"))
        a.session.delete_messages(["m2"])
        assert [h.message_id for h in chats.search_messages("this")] == ["m1"]

    def test_clearing_a_chat_empties_its_part_of_the_index(self, chats, two_chats):
        a, b = two_chats
        a.session.append_message(text_message("a1", "shared word"))
        b.session.append_message(text_message("b1", "shared word"))
        a.session.clear_messages()
        assert hit_keys(chats.search_messages("shared")) == [(b.id, "b1")]

    def test_imported_messages_are_indexed(self, chats, two_chats):
        a, _ = two_chats
        a.session.import_message(text_message("i1", "imported words"), parent_id=None, created_at=1)
        assert [h.message_id for h in chats.search_messages("imported")] == ["i1"]

    def test_a_duplicate_append_changes_nothing(self, chats, two_chats):
        a, _ = two_chats
        a.session.append_message(text_message("m", "original"))
        a.session.append_message(text_message("m", "impostor"))
        assert chats.search_messages("impostor") == []
        assert len(chats.search_messages("original")) == 1

    def test_upserts_and_branches_are_indexed(self, chats, two_chats):
        a, _ = two_chats
        a.session.append_message(text_message("root", "root"))
        a.session.append_message(text_message("b1", "branch one"), parent_id="root")
        a.session.append_message(text_message("b2", "branch two"), parent_id="root")
        a.session.upsert_message(text_message("b1", "branch uno"))
        assert sorted(h.message_id for h in chats.search_messages("branch")) == ["b1", "b2"]
        assert [h.message_id for h in chats.search_messages("uno")] == ["b1"]

    def test_other_sessions_of_a_chat_file_are_not_the_conversation(self, chats, two_chats):
        a, _ = two_chats
        a.sessions.session("scratch").append_message(text_message("s", "scratchpad"))
        assert chats.search_messages("scratchpad") == []

    def test_writes_inside_one_outer_transaction_are_indexed_after_it_commits(
        self, chats, two_chats
    ):
        a, _ = two_chats
        with a.sessions.database.transaction():
            for i in range(3):
                a.session.append_message(text_message(f"m{i}", "batched"))
        assert len(chats.search_messages("batched")) == 3

    def test_a_rolled_back_write_never_reaches_the_index(self, chats, two_chats):
        a, _ = two_chats
        with pytest.raises(RuntimeError), a.sessions.database.transaction():
            a.session.append_message(text_message("m", "ghost"))
            raise RuntimeError("abort")
        assert chats.search_messages("ghost") == []

    def test_many_writes_flush_on_their_own_before_any_search(self, chats, two_chats):
        a, _ = two_chats
        for i in range(FLUSH_EVERY_EVENTS + 10):
            a.session.append_message(text_message(f"m{i}", f"bulk {i}"))
        assert chats._index.pending <= 10
        assert len(chats.search_messages("bulk", limit=10_000)) == FLUSH_EVERY_EVENTS + 10


class TestFanOut:
    """RFC edge case 11: the fan-out path, bounded by a global limit."""

    def test_the_fan_out_finds_the_same_hits_as_the_index(self, chats, two_chats):
        a, b = two_chats
        for i in range(6):
            a.session.append_message(text_message(f"a{i}", f"alpha topic {i}"))
            b.session.append_message(text_message(f"b{i}", f"beta topic {i}"))
        a.session.delete_messages(["a2"])
        b.session.update_message(text_message("b3", "beta changed"))
        indexed = chats.search_messages("topic", limit=100)
        fanned = chats.search_messages_fanout("topic", limit=100)
        assert hit_keys(indexed) == hit_keys(fanned)
        assert len(indexed) == 10

    def test_the_fan_out_limit_is_global(self, chats, two_chats):
        for chat in two_chats:
            for i in range(5):
                chat.session.append_message(text_message(f"m{i}", "same words"))
        hits = chats.search_messages_fanout("same", limit=4)
        assert len(hits) == 4
        assert [h.rank for h in hits] == sorted(h.rank for h in hits)

    def test_the_fan_out_highlights_like_the_index(self, chats, two_chats):
        two_chats[0].session.append_message(text_message("m", "the running dogs bark"))
        (indexed,) = chats.search_messages("run")
        (fanned,) = chats.search_messages_fanout("run")
        assert indexed.snippet == fanned.snippet
        assert SNIPPET_START in fanned.snippet

    def test_the_fan_out_skips_deleted_chats_and_creates_no_files(self, chats, two_chats):
        a, _ = two_chats
        a.session.append_message(text_message("m", "gone soon"))
        chats.delete_chat(a.id)
        chats.create_chat("never written")
        before = chats._files.stored()
        assert chats.search_messages_fanout("gone") == []
        assert chats._files.stored() == before
