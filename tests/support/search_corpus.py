"""Random texts and search queries over a vocabulary where FTS5 and PostgreSQL's own parser
part ways (dotted names, hyphens, diacritics, stems, CJK, operators): the corpus the
search-parity property tests of both engines draw from."""

from __future__ import annotations

from hypothesis import strategies as st

VOCABULARY = [
    "deploy",
    "deployments",
    "deployed",
    "failing",
    "fail",
    "Café",
    "cafe",
    "CAFÉ",
    "cafe\u0301",
    "naïve",
    "naive",
    "foo.bar.com",
    "bar",
    "some-words",
    "some",
    "words",
    "ponies",
    "pony",
    "relational",
    "relate",
    "東京",
    "タワー",
    "Straße",
    "strasse",
    "42",
    "x1",
    "a",
    "I",
    "running",
    "runner",
]
SEPARATORS = [" ", " ", " ", ".", "-", ", ", "\n", "'", "_", "/", " — "]
OPERATORS = ['"', "AND", "OR", "NOT", "NEAR", "*", "(", ")", ":", "^", "+"]

words = st.sampled_from(VOCABULARY)
texts = st.lists(st.tuples(words, st.sampled_from(SEPARATORS)), min_size=1, max_size=12).map(
    lambda pairs: "".join(word + separator for word, separator in pairs)
)
queries = st.lists(
    st.one_of(
        words,
        words.map(lambda word: word[: max(1, len(word) // 2)]),
        st.sampled_from(OPERATORS),
        st.sampled_from(SEPARATORS[3:]).map(lambda separator: f"some{separator}words"),
    ),
    min_size=1,
    max_size=4,
).map(" ".join)
