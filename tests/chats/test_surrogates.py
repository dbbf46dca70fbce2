"""Issue 10: a lone UTF-16 surrogate no longer poisons a chat.

Titles, previews, the cross-chat message index (and its rebuild) and shared memory all store
text by the storage text rule (``backend.storage.text``): a pair spelled as two code units is
its character, a lone surrogate is U+FFFD. A message's own JSON keeps its text exactly.
"""

from __future__ import annotations

import json
import logging

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.chats import Chats
from backend.chats.text import MAX_TITLE_CHARS
from backend.sessions import Sessions
from tests.chats.conftest import text_message
from tests.support.unicode_text import any_text, is_well_formed, word


def hit_ids(hits) -> list[str]:
    return sorted(hit.message_id for hit in hits)


class TestTheMessageIndex:
    def test_a_message_with_a_lone_surrogate_is_found_across_chats(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m", "a broken \ud83d emoji"))
        hits = chats.search_messages("broken")
        assert hit_ids(hits) == ["m"]
        assert is_well_formed(hits[0].snippet)
        assert hit_ids(chats.search_messages_fanout("broken")) == ["m"]
        assert chat.session.get_message("m")["parts"][0]["text"] == "a broken \ud83d emoji"

    def test_flushing_it_logs_no_failure_and_leaves_nothing_to_rebuild(self, chats, caplog):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m", "lonely \udc00 half"))
        with caplog.at_level(logging.WARNING, logger="backend.chats.index"):
            chats.flush_index()
            chats.search_messages("lonely")
        assert caplog.records == []
        assert chats._index.pending == 0

    def test_an_edit_adding_a_lone_surrogate_replaces_the_document(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m", "old words"))
        chats.flush_index()
        chat.session.update_message(text_message("m", "new \ud800 words"))
        assert hit_ids(chats.search_messages("new")) == ["m"]
        assert chats.search_messages("old") == []

    def test_a_full_rebuild_reads_such_messages_from_the_file(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m1", "known \ud83d words"))
        chats.flush_index()
        path = chats.layout.chat_path(chat.id, chat.generation)
        with Sessions(path) as foreign:  # bypasses the directory: only a rebuild sees it
            foreign.session("").append_message(text_message("m2", "smuggled \ude00 words"))
        report = chats.repair_index(full=True)
        assert report.documents_added == 1
        assert hit_ids(chats.search_messages("words")) == ["m1", "m2"]
        assert chats.repair_index(full=True).changed is False

    def test_a_query_holding_a_lone_surrogate_is_safe_on_both_paths(self, chats):
        chat = chats.get_chat(chats.create_chat().id)
        chat.session.append_message(text_message("m", "plain words"))
        assert hit_ids(chats.search_messages("plain \ud800")) == ["m"]
        assert hit_ids(chats.search_messages_fanout("plain \ud800")) == ["m"]


class TestTitlesAndPreviews:
    def test_a_title_with_a_lone_surrogate_is_stored_with_a_replacement_character(self, chats):
        summary = chats.create_chat("plans \ud83d for friday")
        assert summary.title == "plans \ufffd for friday"
        assert chats.get_summary(summary.id).title == summary.title
        assert [c.id for c in chats.search_chats("friday")] == [summary.id]
        assert [c.id for c in chats.list_chats(search="plans \udc00 fri")] == [summary.id]

    def test_a_title_spelling_a_pair_as_two_code_units_keeps_its_character(self, chats):
        summary = chats.create_chat("party \ud83c\udf89")
        assert summary.title == "party 🎉"

    def test_renaming_to_a_title_with_a_lone_surrogate_works(self, chats):
        chat_id = chats.create_chat("first").id
        assert chats.rename_chat(chat_id, "second \udfff").title == "second \ufffd"
        assert [c.title for c in chats.list_chats()] == ["second \ufffd"]

    def test_a_preview_with_a_lone_surrogate_updates_the_sidebar(self, chats, clock):
        chat_id = chats.create_chat("c").id
        clock.advance()
        summary = chats.record_chat_turn(chat_id, "reply \ud83d cut")
        assert summary.last_message_preview == "reply \ufffd cut"
        assert chats.list_chats()[0].last_message_preview == "reply \ufffd cut"

    def test_a_pair_at_the_preview_limit_is_not_cut_in_half(self, chats):
        chat_id = chats.create_chat("c").id
        preview = "x" * 118 + "\ud83d\ude00" + "tail"
        stored = chats.record_chat_turn(chat_id, preview).last_message_preview
        assert stored == "x" * 118 + "😀…"


class TestSharedMemory:
    def test_set_and_get_a_block_with_a_lone_surrogate(self, chats):
        chats.set_shared_context("notes", "likes \ud83d tea")
        assert chats.get_shared_context("notes") == "likes \ufffd tea"

    def test_append_with_lone_surrogates_lands(self, chats):
        chats.append_shared_context("notes", "- one \udc00\n")
        chats.append_shared_context("notes", "- two 😀\n")
        assert chats.get_shared_context("notes") == "- one \ufffd\n- two 😀\n"

    def test_an_indexed_entry_with_a_lone_surrogate_is_searchable(self, chats):
        chats.index_shared("facts", "k1", "prefers green \ud800 tea")
        chats.index_shared("facts", "k1", "prefers black \ud800 tea")  # replace
        assert chats.search_shared("facts", "black \udfff") == "prefers black \ufffd tea"
        assert chats.search_shared("facts", "green") is None

    def test_a_label_with_a_lone_surrogate_names_one_block(self, chats):
        chats.set_shared_context("odd \ud800 label", "content")
        assert chats.get_shared_context("odd \ud800 label") == "content"
        assert chats.list_shared_contexts() == [("odd \ufffd label", "content")]


class TestAnyText:
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(
        junk=st.lists(any_text, max_size=3),
        words=st.lists(word, min_size=1, max_size=3),
        title=any_text.map(lambda text: text[:MAX_TITLE_CHARS]),  # longer is refused
    )
    def test_appending_searching_and_listing_never_raise(
        self, tmp_path_factory, junk, words, title
    ):
        text = " ".join(junk + words + junk)
        with Chats(tmp_path_factory.mktemp("surrogates"), "alice") as chats:
            chat = chats.get_chat(chats.create_chat(title if title.strip() else None).id)
            chat.session.append_message(text_message("m", text))
            chats.record_chat_turn(chat.id, text)
            chats.append_shared_context("notes", text)
            chats.index_shared("facts", "k", text)
            stored = chat.session.get_message("m")["parts"][0]["text"]
            assert stored == json.loads(json.dumps(text))  # exact, as far as JSON can tell
            for found in words:
                assert hit_ids(chats.search_messages(found)) == ["m"]
                assert hit_ids(chats.search_messages_fanout(found)) == ["m"]
                assert chats.search_shared("facts", found) is not None
            for query in [*junk, title]:
                chats.search_messages(query)
                chats.search_chats(query)
                chats.list_chats(search=query)
            (summary,) = chats.list_chats()
            assert is_well_formed(summary.title)
            assert is_well_formed(summary.last_message_preview or "")
            assert chats.repair_index(full=True).changed is False
