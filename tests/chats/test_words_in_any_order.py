"""Words in any order (issue 29, item 3): message, title and memory search find what holds
every word of a query, wherever they stand; the exact phrase ranks first; a quoted run of words
is matched as a phrase; FTS5 syntax typed in a query stays inert. Both engines, both paths."""

import pytest

from tests.chats.conftest import text_message


def hit_ids(hits):
    return [hit.message_id for hit in hits]


@pytest.fixture
def chat(chats):
    return chats.get_chat(chats.create_chat("bread").id)


class TestMessages:
    def test_words_in_another_order_and_apart_are_found(self, chats, chat):
        chat.session.append_message(text_message("m", "my sourdough starter with rye flour"))
        chat.session.append_message(text_message("other", "sourdough only"))
        assert hit_ids(chats.search_messages("sourdough rye")) == ["m"]
        assert hit_ids(chats.search_messages("rye sourdough")) == ["m"]
        assert hit_ids(chats.search_messages_fanout("sourdough rye")) == ["m"]

    def test_the_exact_phrase_ranks_first_even_where_bm25_prefers_another(self, chats, chat):
        chat.session.append_message(text_message("scattered", "rye sourdough and rye sourdough"))
        chat.session.append_message(
            text_message("phrase", "a long story " * 30 + "about sourdough rye bread")
        )
        assert hit_ids(chats.search_messages("sourdough rye")) == ["phrase", "scattered"]
        assert hit_ids(chats.search_messages_fanout("sourdough rye")) == ["phrase", "scattered"]
        # With the words alone, the short text holding them twice is bm25's best.
        assert hit_ids(chats.search_messages("rye")) == ["scattered", "phrase"]

    def test_a_quoted_phrase_keeps_phrase_matching(self, chats, chat):
        chat.session.append_message(text_message("apart", "my sourdough starter with rye flour"))
        chat.session.append_message(text_message("run", "sourdough rye loaves"))
        assert hit_ids(chats.search_messages('"sourdough rye"')) == ["run"]
        assert hit_ids(chats.search_messages_fanout('"sourdough rye"')) == ["run"]
        assert hit_ids(chats.search_messages('"sourdough rye" loaves')) == ["run"]
        assert hit_ids(chats.search_messages('flour "sourdough starter')) == ["apart"]

    def test_the_limit_counts_hits_once_whichever_tier_found_them(self, chats, chat):
        for index in range(6):
            text = "red apple pie" if index % 2 else "apple and red pie"
            chat.session.append_message(text_message(f"m{index}", text))
        hits = chats.search_messages("red apple", limit=4)
        assert hit_ids(hits)[:3] == ["m1", "m3", "m5"] or set(hit_ids(hits)[:3]) == {
            "m1",
            "m3",
            "m5",
        }
        assert len(set(hit_ids(hits))) == 4
        assert len(chats.search_messages("red apple", limit=100)) == 6

    @pytest.mark.parametrize(
        "query",
        ['rye" OR "x', "rye NEAR(flour", "content:rye", "rye*", "(rye) AND NOT flour", '"'],
    )
    def test_fts5_syntax_in_a_query_is_matched_as_words(self, chats, chat, query):
        chat.session.append_message(text_message("m", "my sourdough starter with rye flour"))
        # Operators are words the text does not hold, so nothing matches (no error either),
        # except where every word of the query is in the text.
        expected = ["m"] if query == "rye*" else []
        assert hit_ids(chats.search_messages(query)) == expected
        assert hit_ids(chats.search_messages_fanout(query)) == expected

    def test_words_far_apart_in_a_long_message_are_found(self, chats, chat):
        """On PostgreSQL a long text is indexed in parts: its words may lie in different ones."""
        text = "sourdough " + "filler " * 20_000 + "rye"
        chat.session.append_message(text_message("long", text))
        assert hit_ids(chats.search_messages("rye sourdough")) == ["long"]
        assert hit_ids(chats.search_messages_fanout("rye sourdough")) == ["long"]


class TestKeptToSomeChats:
    def test_chat_ids_keep_the_hits_of_those_chats_only(self, chats):
        ids = []
        for name in ("a", "b", "c"):
            chat = chats.get_chat(chats.create_chat(name).id)
            chat.session.append_message(text_message("m", "sourdough with rye"))
            ids.append(chat.id)
        kept = {ids[0], ids[2]}
        hits = chats.search_messages("rye sourdough", chat_ids=kept)
        assert sorted(hit.chat_id for hit in hits) == sorted(kept)
        assert chats.search_messages("rye sourdough", chat_ids=[]) == []
        assert len(chats.search_messages("rye sourdough", chat_ids=None)) == 3
        with pytest.raises(TypeError):
            chats.search_messages("rye", chat_ids=ids[0])


class TestTitles:
    def test_title_words_in_any_order_the_exact_phrase_first(self, chats):
        scattered = chats.create_chat("Trip plans for Lisbon")
        phrase = chats.create_chat("Lisbon trip")
        chats.create_chat("Lisbon food")
        found = [s.id for s in chats.search_chats("lisbon tri")]
        assert found == [phrase.id, scattered.id]
        assert [s.id for s in chats.search_chats('"lisbon trip"')] == [phrase.id]


class TestMemory:
    def test_entries_with_every_word_come_before_those_with_some(self, chats):
        some, every = "rye rye rye rye", "flour from rye, for the sourdough starter"
        phrase = "a long note " * 20 + "about sourdough rye"
        for key, content in (("some", some), ("every", every), ("phrase", phrase)):
            chats.index_shared("notes", key, content)
        found = chats.search_shared("notes", "sourdough rye")
        assert found is not None
        assert found.split("\n\n") == [phrase, every, some]
