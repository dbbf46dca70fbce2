"""Who may do what: ``Sharing.authorize`` against the one table, exhaustively, on both
engines; and its refusals for people outside the chat."""

from __future__ import annotations

import itertools

import pytest

from backend.errors import (
    AccountDisabledError,
    ChatActRefusedError,
    ChatNotFoundError,
    InvalidInputError,
)
from backend.sharing import ACTS, ALLOWED_ACTS, CHAT_ROLES, role_allows

# The specification, written out independently of backend.sharing.roles.
EXPECTED = {
    "owner": {
        "read", "send", "retry", "branch", "edit", "rename", "delete", "fork", "share",
        "change-state", "export",
    },
    "participant": {"read", "send", "retry", "branch", "leave"},
    "viewer": {"read", "leave"},
}  # fmt: skip
ISSUE_ACTS = {
    "read", "send", "retry", "branch", "edit", "rename", "delete", "fork", "share",
    "change-state", "export",
}  # fmt: skip


class TestTheTable:
    def test_every_act_the_issue_names_is_in_the_table(self):
        assert set(ACTS) >= ISSUE_ACTS
        assert set(ACTS) == ISSUE_ACTS | {"leave"}

    def test_the_table_is_the_specification(self):
        assert {role: set(acts) for role, acts in ALLOWED_ACTS.items()} == EXPECTED

    @pytest.mark.parametrize(("role", "act"), list(itertools.product(CHAT_ROLES, ACTS)))
    def test_role_allows_reads_the_table(self, role, act):
        assert role_allows(role, act) == (act in EXPECTED[role])

    def test_a_viewer_may_do_nothing_a_participant_may_not_and_so_on_up(self):
        assert ALLOWED_ACTS["viewer"] <= ALLOWED_ACTS["participant"]
        assert ALLOWED_ACTS["participant"] - {"leave"} <= ALLOWED_ACTS["owner"]


class TestAuthorize:
    def test_every_role_and_act_gets_the_tables_answer(self, sharing, shared, owner, pat, vic):
        people = {"owner": owner, "participant": pat, "viewer": vic}
        for (role, person), act in itertools.product(people.items(), ACTS):
            if act in EXPECTED[role]:
                assert sharing.authorize(person, shared, act) == role, (role, act)
            else:
                with pytest.raises(ChatActRefusedError) as refused:
                    sharing.authorize(person, shared, act)
                assert (refused.value.act, refused.value.role) == (act, role)

    def test_a_stranger_is_told_the_chat_does_not_exist_for_every_act(
        self, sharing, shared, stranger
    ):
        for act in ACTS:
            with pytest.raises(ChatNotFoundError) as refused:
                sharing.authorize(stranger, shared, act)
            assert refused.value.chat_id == shared.chat_id

    def test_a_chat_that_does_not_exist_reads_the_same_as_one_not_shared_with_you(
        self, sharing, shared, owner, stranger
    ):
        missing = shared.model_copy(update={"chat_id": "no-such-chat"})
        errors = []
        for chat in (shared, missing):
            with pytest.raises(ChatNotFoundError) as refused:
                sharing.authorize(stranger, chat, "read")
            errors.append(str(refused.value).replace(chat.chat_id, "<id>"))
        assert errors[0] == errors[1]

    def test_the_owner_id_in_the_reference_decides_not_the_chat_id_alone(
        self, sharing, shared, pat, stranger
    ):
        """The same chat id in someone else's directory is another chat."""
        elsewhere = shared.model_copy(update={"owner_id": stranger.id})
        with pytest.raises(ChatNotFoundError):
            sharing.authorize(pat, elsewhere, "read")

    def test_a_removed_member_is_refused_at_their_next_act(self, sharing, shared, owner, pat):
        assert sharing.authorize(pat, shared, "send") == "participant"
        sharing.remove_member(owner, shared, pat.id)
        with pytest.raises(ChatNotFoundError):
            sharing.authorize(pat, shared, "read")

    def test_a_disabled_account_is_refused_even_as_owner(
        self, sharing, shared, owner, accounts, admin
    ):
        disabled_owner = accounts.disable_user(admin.id, owner.id)
        with pytest.raises(AccountDisabledError):
            sharing.authorize(disabled_owner, shared, "read")

    def test_an_unknown_act_is_invalid_input(self, sharing, shared, owner):
        with pytest.raises(InvalidInputError):
            sharing.authorize(owner, shared, "administer")  # type: ignore[arg-type]

    def test_the_refusals_read_as_sentences(self, sharing, shared, owner, pat, vic):
        with pytest.raises(ChatActRefusedError, match="A viewer can only read this chat"):
            sharing.authorize(vic, shared, "send")
        with pytest.raises(ChatActRefusedError, match="Only the owner of this chat"):
            sharing.authorize(pat, shared, "rename")
        with pytest.raises(ChatActRefusedError, match="You own this chat"):
            sharing.authorize(owner, shared, "leave")
