"""The chat index: create, list (with cursors and title filter), rename, previews, titles."""

import re

import pytest

from backend.chats import ChatCursor, Chats, ChatSummary
from backend.chats.chats import DEFAULT_LIST_LIMIT
from backend.errors import ChatNotFoundError, ConflictError, InvalidIdError
from tests.chats.conftest import FakeClock


class TestCreate:
    def test_a_new_chat_gets_a_server_id_the_default_title_and_equal_timestamps(self, chats, clock):
        summary = chats.create_chat()
        assert summary.title.startswith("Chat — ")
        assert len(summary.title) == len("Chat — YYYY-MM-DD")
        assert summary.created_at == summary.updated_at == clock.now
        assert summary.last_message_preview is None
        assert chats.get_summary(summary.id) == summary

    def test_an_explicit_title_is_trimmed(self, chats):
        assert chats.create_chat("  Trip  plans ").title == "Trip plans"

    def test_a_blank_explicit_title_is_rejected(self, chats):
        with pytest.raises(ValueError, match="blank"):
            chats.create_chat("   ")
        assert chats.list_chats() == []

    def test_a_title_hook_names_new_chats(self, tmp_path):
        seen = []

        def generate_title(first_message):
            seen.append(first_message)
            return "  Generated  "

        with Chats(tmp_path, "bob", generate_title=generate_title) as chats:
            assert chats.create_chat().title == "Generated"
            assert chats.create_chat("Mine").title == "Mine"
        assert seen == [None]

    def test_every_create_mints_a_different_id(self, chats):
        assert len({chats.create_chat().id for _ in range(50)}) == 50

    def test_creating_writes_no_chat_file(self, chats):
        """No conversation storage: no file on SQLite, no row on PostgreSQL."""
        chats.create_chat()
        assert chats._files.stored() == []

    def test_re_creating_a_live_id_is_a_conflict(self, chats):
        summary = chats.create_chat()
        with pytest.raises(ConflictError):
            chats.create_chat(chat_id=summary.id)

    def test_an_explicit_id_from_another_directory_is_refused(self, chats, tmp_path):
        with Chats(tmp_path, "mallory") as other:
            foreign = other.create_chat().id
        with pytest.raises(InvalidIdError):
            chats.create_chat(chat_id=foreign)


class TestList:
    def test_newest_updated_comes_first(self, chats, clock):
        a = chats.create_chat("a")
        clock.advance()
        b = chats.create_chat("b")
        clock.advance()
        chats.record_chat_turn(a.id, "hi")
        assert [c.id for c in chats.list_chats()] == [a.id, b.id]

    def test_limit_caps_the_page(self, chats):
        for _ in range(5):
            chats.create_chat()
        assert len(chats.list_chats(limit=3)) == 3

    def test_a_limit_beyond_sqlite_integers_means_no_limit(self, chats):
        created = {chats.create_chat(f"alpha {n}").id for n in range(3)}
        assert {c.id for c in chats.list_chats(limit=2**63)} == created
        assert {c.id for c in chats.list_chats(limit=2**100, search="alpha")} == created
        assert {c.id for c in chats.search_chats("alpha", limit=2**63)} == created

    def test_a_limit_of_none_is_the_default(self, chats):
        for n in range(DEFAULT_LIST_LIMIT + 1):
            chats.create_chat(f"alpha {n}")
        assert len(chats.list_chats(limit=None)) == DEFAULT_LIST_LIMIT
        assert len(chats.search_chats("alpha", limit=None)) == DEFAULT_LIST_LIMIT

    @pytest.mark.parametrize("limit", ["5", 2.5, True])
    def test_a_limit_that_is_not_an_integer_is_a_clear_type_error(self, chats, limit):
        with pytest.raises(TypeError, match="limit must be an integer"):
            chats.list_chats(limit=limit)

    @pytest.mark.parametrize("limit", [0, -1])
    def test_a_limit_below_one_is_rejected(self, chats, limit):
        with pytest.raises(ValueError):
            chats.list_chats(limit=limit)

    def test_an_updated_at_cursor_returns_strictly_older_chats(self, chats, clock):
        ids = []
        for _ in range(4):
            ids.append(chats.create_chat().id)
            clock.advance()
        first = chats.list_chats(limit=2)
        rest = chats.list_chats(before=first[-1].updated_at)
        assert [c.id for c in first + rest] == ids[::-1]

    def test_a_tie_stable_cursor_pages_through_equal_timestamps_without_gaps(self, chats):
        created = {chats.create_chat().id for _ in range(7)}  # the clock stands still
        seen: list[str] = []
        cursor = None
        while True:
            page = chats.list_chats(limit=3, before=cursor)
            if not page:
                break
            seen += [c.id for c in page]
            cursor = page[-1].cursor
        assert len(seen) == 7
        assert set(seen) == created

    def test_a_cursor_may_be_a_summary_or_a_pair(self, chats):
        for _ in range(3):
            chats.create_chat()
        page = chats.list_chats()
        by_summary = chats.list_chats(before=page[0])
        by_pair = chats.list_chats(before=(page[0].updated_at, page[0].id))
        by_cursor = chats.list_chats(before=ChatCursor(page[0].updated_at, page[0].id))
        assert by_summary == by_pair == by_cursor == page[1:]

    def test_a_malformed_cursor_is_a_type_error(self, chats):
        with pytest.raises(TypeError):
            chats.list_chats(before="yesterday")

    def test_search_filters_by_title_and_keeps_the_newest_first_order(self, chats, clock):
        old = chats.create_chat("Trip to Lisbon")
        clock.advance()
        chats.create_chat("Groceries")
        clock.advance()
        new = chats.create_chat("Trip budget")
        assert [c.id for c in chats.list_chats(search="trip")] == [new.id, old.id]
        assert [c.id for c in chats.list_chats(search="tri")] == [new.id, old.id]
        assert chats.list_chats(search="trip lis") == [chats.get_summary(old.id)]

    def test_a_blank_search_is_no_filter(self, chats):
        chats.create_chat("x")
        assert len(chats.list_chats(search="  ")) == 1


class TestTitleSearch:
    def test_titles_match_by_word_and_prefix_with_diacritics_folded(self, chats):
        cafe = chats.create_chat("Café plans")
        chats.create_chat("Other")
        assert chats.search_chats("cafe") == [chats.get_summary(cafe.id)]
        assert chats.search_chats("pla") == [chats.get_summary(cafe.id)]

    @pytest.mark.parametrize(
        ("query", "finds"),
        [
            ("", False),
            ("   ", False),
            ('"', False),
            ("OR", True),
            ("NEAR(", True),
            ("*", False),
            ("title:", True),
            ("\x00", False),
            ("or NEA", True),
            ("title OR x", False),
        ],
    )
    def test_any_user_query_is_safe(self, chats, query, finds):
        summary = chats.create_chat("OR title NEAR")
        results = chats.search_chats(query)
        # Safe: operators are words like any other, so a hit holds every word of the query
        # (the last one as a prefix), and a query without words finds nothing.
        assert results == ([summary] if finds else [])
        title_words = re.findall(r"\w+", summary.title.lower())
        *whole, last = re.findall(r"\w+", query.lower()) or [""]
        if results:
            assert all(word in title_words for word in whole)
            assert any(word.startswith(last) for word in title_words)

    def test_a_blank_query_finds_nothing(self, chats):
        chats.create_chat("x")
        assert chats.search_chats("") == []

    def test_a_renamed_chat_is_found_by_its_new_title_only(self, chats):
        summary = chats.create_chat("Old name")
        chats.rename_chat(summary.id, "New name")
        assert chats.search_chats("old") == []
        assert [c.id for c in chats.search_chats("new")] == [summary.id]


class TestRename:
    def test_rename_trims_and_returns_the_new_summary(self, chats):
        summary = chats.create_chat("a")
        renamed = chats.rename_chat(summary.id, "  b  ")
        assert renamed.title == "b"
        assert chats.get_summary(summary.id).title == "b"

    def test_rename_does_not_reorder_the_list(self, chats, clock):
        a = chats.create_chat("a")
        clock.advance()
        b = chats.create_chat("b")
        clock.advance()
        chats.rename_chat(a.id, "a2")
        assert [c.id for c in chats.list_chats()] == [b.id, a.id]

    @pytest.mark.parametrize("blank", ["", "  ", "\n"])
    def test_a_blank_title_is_rejected_and_the_old_one_kept(self, chats, blank):
        summary = chats.create_chat("keep")
        with pytest.raises(ValueError, match="must not be blank"):
            chats.rename_chat(summary.id, blank)
        assert chats.get_summary(summary.id).title == "keep"

    def test_renaming_a_deleted_chat_is_not_found(self, chats):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        with pytest.raises(KeyError):
            chats.rename_chat(summary.id, "x")


class TestRecordChatTurn:
    def test_a_turn_bumps_the_order_and_sets_a_short_preview(self, chats, clock):
        summary = chats.create_chat()
        clock.advance(5)
        after = chats.record_chat_turn(summary.id, "  hello \n world " + "x" * 300)
        assert after.updated_at == summary.updated_at + 5
        assert after.last_message_preview.startswith("hello world x")
        assert len(after.last_message_preview) == 120
        assert chats.get_summary(summary.id) == after

    def test_a_turn_for_a_deleted_chat_is_refused_and_resurrects_nothing(self, chats):
        summary = chats.create_chat()
        chats.delete_chat(summary.id)
        with pytest.raises(ChatNotFoundError):
            chats.record_chat_turn(summary.id, "late")
        assert chats.list_chats() == []

    def test_a_turn_from_a_stale_generation_is_refused(self, chats):
        summary = chats.create_chat()
        generation = chats.get_chat(summary.id).generation
        chats.delete_chat(summary.id)
        chats.create_chat(chat_id=summary.id)
        with pytest.raises(ChatNotFoundError):
            chats.record_chat_turn(summary.id, "late", generation=generation)
        chats.record_chat_turn(summary.id, "fresh", generation=generation + 1)


class TestSummaries:
    def test_a_summary_carries_only_sidebar_fields(self, chats):
        """RFC edge case 20: nothing internal is broadcast with the chat list."""
        summary = chats.create_chat()
        assert set(ChatSummary.model_fields) == {
            "id",
            "title",
            "created_at",
            "updated_at",
            "last_message_preview",
            "archived_at",
            "pinned_at",  # the "Pinned" group
            "expires_at",  # a temporary chat's banner says when it ends
        }
        assert set(summary.model_dump()) == set(ChatSummary.model_fields)

    def test_a_summary_is_immutable(self, chats):
        summary = chats.create_chat()
        with pytest.raises(ValueError):
            summary.title = "x"

    def test_summaries_survive_reopening_the_directory(self, tmp_path):
        clock = FakeClock()
        with Chats(tmp_path, "alice", clock=clock) as chats:
            summary = chats.create_chat("persist")
        with Chats(tmp_path, "alice", clock=clock) as chats:
            assert chats.list_chats() == [summary]

    def test_two_directories_share_nothing(self, tmp_path):
        with Chats(tmp_path, "alice") as alice, Chats(tmp_path, "bob") as bob:
            summary = alice.create_chat()
            assert bob.list_chats() == []
            with pytest.raises(ValueError):
                bob.get_chat(summary.id)
