"""The shared tokens a tab links to: one per person, per chat, and one of each tab alone.

Reflex refuses a token with ``_`` in it, and two views that share a token share their state:
each name is kept apart from the others and from every other name of its kind.
"""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from chatsapp.auth.identity import conversation_token, directory_token, solo_token

names = st.text(alphabet=st.characters(codec="ascii"), min_size=1, max_size=40)


@given(names, names)
def test_different_names_never_share_a_token(first: str, second: str) -> None:
    for token in (conversation_token, solo_token):
        assert (token(first) == token(second)) == (first == second)
        assert "_" not in token(first)


def test_a_name_that_looks_encoded_is_not_taken_for_an_encoded_one() -> None:
    # "_" is encoded as "x5f": the plain name "x5f" must not give the same token.
    for token in (conversation_token, solo_token):
        assert token("x5f") != token("_")


@given(names, names)
def test_a_tabs_own_token_is_never_a_chats_or_a_persons(tab: str, other: str) -> None:
    assert solo_token(tab) not in (conversation_token(other), directory_token(other))


def test_each_tab_has_a_token_of_its_own() -> None:
    tabs = [str(uuid.uuid4()) for _ in range(3)]
    assert len({solo_token(tab) for tab in tabs}) == 3
