"""A user id names a directory and a Reflex shared-state token; a username is what people type."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from backend.accounts import USER_ID_PATTERN, normalize_username, validate_user_id
from backend.accounts.names import USERNAME_PATTERN, mint_user_id
from backend.chats.ids import validate_directory_id
from backend.errors import InvalidIdError, InvalidUsernameError

REFLEX_TOKEN_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")  # chatsapp/auth/identity.py's rule

usernames = st.from_regex(USERNAME_PATTERN, fullmatch=True)


class TestUserIds:
    @given(usernames)
    def test_every_minted_id_is_a_valid_directory_id_and_reflex_token_id(self, username):
        user_id = mint_user_id(username)
        assert REFLEX_TOKEN_ID.match(user_id)
        assert validate_directory_id(user_id) == user_id
        assert USER_ID_PATTERN.fullmatch(user_id)

    def test_an_id_reads_like_its_username(self):
        assert re.fullmatch(
            r"bob-smith-example-com-[0-9a-z]{6}", mint_user_id("bob.smith@example.com")
        )

    def test_the_same_username_twice_gets_different_ids(self):
        assert mint_user_id("alice") != mint_user_id("alice")

    @pytest.mark.parametrize("value", ["", "Local", "a_b", "../x", "a/b", "-x", "x" * 64, None])
    def test_values_that_cannot_be_both_are_refused(self, value):
        with pytest.raises(InvalidIdError):
            validate_user_id(value)


class TestUsernames:
    def test_case_width_and_surrounding_space_fold_to_one_name(self):
        assert normalize_username("  ＡＬＩＣＥ ") == normalize_username("alice") == "alice"

    @given(st.text(max_size=80))
    def test_any_text_is_either_refused_or_normalised_into_the_rules(self, text):
        try:
            name = normalize_username(text)
        except InvalidUsernameError:
            return
        assert USERNAME_PATTERN.fullmatch(name)
        assert normalize_username(name) == name
