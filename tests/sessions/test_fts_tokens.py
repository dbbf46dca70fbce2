"""The Python tokenizer reads every text exactly as SQLite's FTS5 does (differential tests)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.sessions.fts_tokens import (
    MESSAGES,
    TITLES,
    Tokenizer,
    fold_map,
    is_separator,
    starts_a_token,
)
from backend.sessions.search import FTS_TOKENIZER
from tests.support.fts5_reference import fts5_tokens

CONFIGS = [MESSAGES, TITLES, Tokenizer(remove_diacritics=0, porter=False)]

_pieces = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x24F), max_size=12),
    st.sampled_from(
        [
            " ",
            ".",
            "-",
            "'",
            "café",
            "Cafe\u0301",
            "\u0301",
            "ǘ",
            "Ǖ",
            "ﬁ",
            "ß",
            "İ",
            "東京タワー",
            "한국어",
            "١٢٣",
            "½",
            "foo.bar.com",
            "some-words",
            "ponies",
            "relational",
            "hopping",
            "agreed",
            "yyed",
            "\ue000",
            "\U0001f600",
            "\U000e0001",
        ]
    ),
)
texts = st.lists(_pieces, max_size=12).map("".join)


def test_the_message_tokenizer_is_the_one_the_fts_tables_declare():
    assert MESSAGES.spec == FTS_TOKENIZER
    assert TITLES.spec == "unicode61 remove_diacritics 2"


@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config.spec)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(texts, min_size=1, max_size=8))
def test_any_text_gives_the_token_stream_fts5_stores(config, batch):
    assert [config.tokens(text) for text in batch] == fts5_tokens(config.spec, batch)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config.spec)
def test_every_code_point_in_sampled_ranges_reads_as_fts5_reads_it(config):
    """Dense scripts below U+3400 whole, then every 61st code point up to U+10FFFF."""
    points = [*range(0x3400), *range(0x3400, 0x110000, 61)]
    points = [point for point in points if not 0xD800 <= point <= 0xDFFF]
    wrapped = [f"a{chr(point)}b" for point in points]
    assert [config.tokens(text) for text in wrapped] == fts5_tokens(config.spec, wrapped)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("some.words", ["some", "word"]),
        ("some-words", ["some", "word"]),
        ("foo.bar.com", ["foo", "bar", "com"]),
        ("Café CAFE cafe\u0301", ["cafe", "cafe", "cafe"]),
        ("the deployments failed", ["the", "deploy", "fail"]),
        ("東京タワーに行きました", ["東京タワーに行きました"]),
        ("\u0301\u0301 x", ["x"]),
    ],
)
def test_where_postgresql_s_parser_differs_the_tokens_are_fts5_s(text, tokens):
    assert MESSAGES.tokens(text) == tokens
    assert fts5_tokens(MESSAGES.spec, [text]) == [tokens]


@pytest.mark.parametrize("level", [0, 1, 2])
def test_folding_never_turns_a_token_character_into_a_separator(level):
    """Why cutting a text before folding its tokens gives FTS5's tokens."""
    for point, folded in fold_map(level).items():
        assert not is_separator(chr(point))
        assert all(not is_separator(char) for char in folded)
        if folded:
            assert starts_a_token(chr(point)) == starts_a_token(folded)
        else:  # so cutting before folding never leaves an empty token
            assert not starts_a_token(chr(point))


def test_long_tokens_pass_the_stemmer_unchanged_as_in_fts5():
    long_word = "relational" * 7  # 70 bytes: beyond the stemmer's 64
    text = f"{long_word} {'é' * 40}s {'e' * 62}s"
    assert MESSAGES.tokens(text) == fts5_tokens(MESSAGES.spec, [text])[0]
    assert MESSAGES.tokens(text)[0] == long_word


def test_the_ascii_pattern_names_exactly_fts5_s_ascii_token_characters():
    ascii_tokens = {chr(point) for point in range(128) if starts_a_token(chr(point))}
    assert ascii_tokens == set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    assert all(is_separator(chr(point)) for point in range(128) if chr(point) not in ascii_tokens)
