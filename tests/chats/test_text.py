"""Pure text rules: titles, previews, quoting of user queries, snippets."""

import sqlite3

import pytest

from backend.chats.text import (
    MAX_PREVIEW_CHARS,
    MAX_TITLE_CHARS,
    PLACEHOLDER_TITLE,
    SNIPPET_END,
    SNIPPET_START,
    any_terms_query,
    clean_preview,
    clean_title,
    default_title,
    is_default_title,
    phrase_query,
    prefix_query,
    split_snippet,
)

NASTY_QUERIES = [
    '"',
    '""',
    "a OR b",
    "NEAR(a b)",
    "title:x",
    "*",
    "(",
    "a AND",
    "-x",
    "^a",
    "\x00",
    "'; DROP TABLE chats; --",
    "emoji 🎉 query",
]


class TestTitles:
    def test_the_default_title_is_chat_dash_iso_date(self):
        assert default_title(0) == "Chat — 1970-01-01"

    @pytest.mark.parametrize("given", [default_title(0), PLACEHOLDER_TITLE, "", "  "])
    def test_a_title_the_app_gave_is_a_default_title(self, given):
        assert is_default_title(given)

    @pytest.mark.parametrize("chosen", ["Trip plans", "Chat about tea", "New chat with Ana"])
    def test_a_title_a_person_chose_is_not(self, chosen):
        assert not is_default_title(chosen)

    def test_a_title_is_trimmed_and_inner_whitespace_collapsed(self):
        assert clean_title("  Trip \n plans  ") == "Trip plans"

    @pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
    def test_a_blank_title_is_rejected_with_a_clear_error(self, blank):
        with pytest.raises(ValueError, match="must not be blank"):
            clean_title(blank)

    def test_an_oversized_title_is_rejected_not_truncated(self):
        with pytest.raises(ValueError, match="limit"):
            clean_title("x" * (MAX_TITLE_CHARS + 1))

    def test_a_non_string_title_is_a_type_error(self):
        with pytest.raises(TypeError):
            clean_title(3)


class TestPreviews:
    def test_a_long_preview_is_cut_to_the_limit_with_an_ellipsis(self):
        preview = clean_preview("word " * 100)
        assert len(preview) == MAX_PREVIEW_CHARS
        assert preview.endswith("…")

    def test_a_preview_never_cuts_a_code_point(self):
        preview = clean_preview("🎉" * 500)
        assert preview == "🎉" * (MAX_PREVIEW_CHARS - 1) + "…"


class TestQueries:
    @pytest.mark.parametrize("query", NASTY_QUERIES)
    def test_every_query_builder_yields_valid_fts5_for_any_input(self, query):
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(content)")
        conn.execute("INSERT INTO t VALUES ('a b title x emoji query')")
        for build in (phrase_query, prefix_query, any_terms_query):
            match = build(query)
            if match is not None:
                conn.execute("SELECT * FROM t WHERE t MATCH ?", (match,)).fetchall()

    @pytest.mark.parametrize("blank", ["", "   ", None])
    def test_a_blank_query_builds_nothing(self, blank):
        assert phrase_query(blank) is None
        assert prefix_query(blank) is None
        assert any_terms_query(blank) is None

    def test_the_last_title_word_matches_as_a_prefix(self):
        assert prefix_query('trip pla"') == '"trip" "pla"*'

    def test_a_quoted_run_of_words_is_one_phrase_term(self):
        assert prefix_query('"lisbon trip" pla') == '"lisbon trip" "pla"*'
        assert any_terms_query('"lisbon trip" pla') == '"lisbon trip" OR "pla"'


class TestSnippets:
    def test_a_snippet_splits_into_plain_and_hit_pieces(self):
        snippet = f"the {SNIPPET_START}quick{SNIPPET_END} fox {SNIPPET_START}jumps{SNIPPET_END}"
        assert split_snippet(snippet) == [
            ("the ", False),
            ("quick", True),
            (" fox ", False),
            ("jumps", True),
        ]

    def test_markup_in_a_snippet_stays_text(self):
        assert split_snippet("<b>x</b>") == [("<b>x</b>", False)]
