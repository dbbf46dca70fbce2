"""Hypothesis strategies for text that may hold lone UTF-16 surrogates (issue 10).

``st.characters(blacklist_categories=())`` allows surrogates (category Cs) but they are 0.2% of
the code space and are in practice never drawn, so ``any_text`` mixes runs of arbitrary code
points with runs of surrogates: lone halves, pairs spelled as two code units, reversed pairs.
"""

from __future__ import annotations

from hypothesis import strategies as st

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
any_text = st.lists(
    st.one_of(
        st.text(st.characters(blacklist_categories=())),
        st.text(surrogates, min_size=1, max_size=3),
    ),
    max_size=6,
).map("".join)
valid_unicode = st.text(st.characters(blacklist_categories=("Cs",)))
word = st.text(st.characters(whitelist_categories=("Lu", "Ll", "Nd")), min_size=1, max_size=12)
"""One token for FTS5's unicode61 tokenizer: letters and digits only."""


def is_well_formed(text: str) -> bool:
    """True when ``text`` encodes as UTF-8 (holds no surrogate code point)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
