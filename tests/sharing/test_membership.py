"""Sharing a chat with people: adding, roles, removing, leaving, listing, and the refusals."""

from __future__ import annotations

import threading

import pytest

from backend.errors import (
    AlreadyMemberError,
    CannotShareWithSelfError,
    ChatActRefusedError,
    ChatNotFoundError,
    InvalidInputError,
    MemberNotFoundError,
    ShareRecipientUnavailableError,
)
from backend.sharing import ChatRef, Member, SharedChat, Sharing
from tests.accounts.conftest import START_MS
from tests.support.deadlines import WAIT_S


class TestSharing:
    def test_a_shared_chat_lists_the_owner_first_then_members_in_the_order_added(
        self, sharing, chat, owner, pat, vic, clock
    ):
        clock.advance_s(1)
        sharing.share(owner, chat, "vic", "viewer")
        clock.advance_s(1)
        sharing.share(owner, chat, "pat", "participant")
        assert [(m.username, m.role) for m in sharing.members(owner, chat)] == [
            ("olivia", "owner"),
            ("vic", "viewer"),
            ("pat", "participant"),
        ]

    def test_sharing_returns_the_new_member(self, sharing, chat, owner, pat, clock):
        assert sharing.share(owner, chat, "pat", "participant") == Member(
            user_id=pat.id, username="pat", role="participant", since=clock.now
        )

    def test_a_typed_name_is_forgiven_case_and_spaces_as_at_sign_in(
        self, sharing, chat, owner, pat
    ):
        assert sharing.share(owner, chat, "  PAT ", "viewer").user_id == pat.id

    def test_members_see_the_member_list_too_strangers_do_not(
        self, sharing, shared, owner, vic, stranger
    ):
        assert sharing.members(vic, shared) == sharing.members(owner, shared)
        with pytest.raises(ChatNotFoundError):
            sharing.members(stranger, shared)

    def test_shared_with_me_names_owner_chat_role_and_since(self, sharing, chat, owner, pat, clock):
        clock.advance_s(5)
        sharing.share(owner, chat, "pat", "participant")
        other = ChatRef(owner_id=owner.id, chat_id="second")
        clock.advance_s(5)
        sharing.share(owner, other, "pat", "viewer")
        assert sharing.shared_with_me(pat) == [
            SharedChat(
                owner_id=owner.id,
                owner_username="olivia",
                chat_id="second",
                role="viewer",
                since=START_MS + 10_000,
            ),
            SharedChat(
                owner_id=owner.id,
                owner_username="olivia",
                chat_id=chat.chat_id,
                role="participant",
                since=START_MS + 5_000,
            ),
        ]
        assert sharing.shared_with_me(owner) == []

    def test_the_conversation_record_participants_are_the_owner_then_the_members(
        self, sharing, shared, owner, pat, vic
    ):
        assert sharing.participant_ids(shared) == (owner.id, pat.id, vic.id)
        alone = ChatRef(owner_id=owner.id, chat_id="private")
        assert sharing.participant_ids(alone) == (owner.id,)


class TestRefusals:
    def test_sharing_with_yourself(self, sharing, chat, owner):
        with pytest.raises(CannotShareWithSelfError):
            sharing.share(owner, chat, "olivia", "viewer")

    def test_an_unknown_a_malformed_and_a_disabled_name_get_one_and_the_same_refusal(
        self, sharing, chat, owner, disabled
    ):
        texts = []
        for name in ("nobody-here", "../../etc", disabled.username, "", 42):
            with pytest.raises(ShareRecipientUnavailableError) as refused:
                sharing.share(owner, chat, name, "viewer")  # type: ignore[arg-type]
            texts.append(str(refused.value))
        assert set(texts) == {ShareRecipientUnavailableError.MESSAGE}
        assert sharing.members(owner, chat)[1:] == []

    def test_sharing_twice(self, sharing, shared, owner):
        with pytest.raises(AlreadyMemberError, match="pat is already a member"):
            sharing.share(owner, shared, "pat", "viewer")
        roles = {m.username: m.role for m in sharing.members(owner, shared)}
        assert roles["pat"] == "participant"  # the refused second share changed nothing

    def test_a_member_cannot_share_the_owners_chat(self, sharing, shared, pat):
        with pytest.raises(ChatActRefusedError):
            sharing.share(pat, shared, "sam", "viewer")

    def test_a_stranger_cannot_share_a_chat_and_cannot_learn_a_name_exists_by_trying(
        self, sharing, chat, stranger
    ):
        """The owner check comes before the name is looked up."""
        for name in ("pat", "nobody-here"):
            with pytest.raises(ChatNotFoundError):
                sharing.share(stranger, chat, name, "viewer")

    def test_an_unknown_role(self, sharing, chat, owner, pat):
        for role in ("owner", "admin", None):
            with pytest.raises(InvalidInputError):
                sharing.share(owner, chat, "pat", role)  # type: ignore[arg-type]

    def test_removing_or_re_roling_someone_who_is_not_a_member(
        self, sharing, shared, owner, stranger
    ):
        with pytest.raises(MemberNotFoundError):
            sharing.remove_member(owner, shared, stranger.id)
        with pytest.raises(MemberNotFoundError):
            sharing.change_role(owner, shared, stranger.id, "viewer")

    def test_only_the_owner_removes_or_changes_roles(self, sharing, shared, pat, vic):
        with pytest.raises(ChatActRefusedError):
            sharing.remove_member(pat, shared, vic.id)
        with pytest.raises(ChatActRefusedError):
            sharing.change_role(vic, shared, vic.id, "participant")

    def test_the_owner_cannot_leave(self, sharing, shared, owner):
        with pytest.raises(ChatActRefusedError):
            sharing.leave(owner, shared)


class TestRolesAndLeaving:
    def test_changing_a_role_takes_effect_at_the_next_act(self, sharing, shared, owner, vic):
        with pytest.raises(ChatActRefusedError):
            sharing.authorize(vic, shared, "send")
        assert sharing.change_role(owner, shared, vic.id, "participant").role == "participant"
        assert sharing.authorize(vic, shared, "send") == "participant"

    def test_removing_a_member_takes_the_chat_away(self, sharing, shared, owner, pat):
        sharing.remove_member(owner, shared, pat.id)
        assert sharing.shared_with_me(pat) == []
        assert pat.id not in sharing.participant_ids(shared)

    def test_a_member_leaves(self, sharing, shared, vic):
        sharing.leave(vic, shared)
        assert sharing.shared_with_me(vic) == []
        with pytest.raises(ChatNotFoundError):
            sharing.leave(vic, shared)

    def test_a_removed_member_can_be_added_again(self, sharing, shared, owner, pat):
        sharing.remove_member(owner, shared, pat.id)
        assert sharing.share(owner, shared, "pat", "viewer").role == "viewer"


class TestTheChatsLife:
    def test_deleting_the_chat_takes_it_from_every_member_and_undo_gives_it_back(
        self, sharing, shared, owner, pat, vic, stranger
    ):
        sharing.chat_deleted(owner, shared)
        for member in (pat, vic):
            assert sharing.shared_with_me(member) == []
            with pytest.raises(ChatNotFoundError):
                sharing.authorize(member, shared, "read")
        with pytest.raises(ChatNotFoundError):
            sharing.share(owner, shared, "sam", "viewer")
        sharing.chat_restored(owner, shared)
        assert sharing.authorize(pat, shared, "send") == "participant"
        assert sharing.authorize(vic, shared, "read") == "viewer"

    def test_only_the_owner_deletes(self, sharing, shared, pat):
        with pytest.raises(ChatActRefusedError):
            sharing.chat_deleted(pat, shared)

    def test_a_chat_that_ends_ends_its_memberships(self, sharing, shared, owner, pat):
        sharing.chat_ended(shared)
        assert sharing.shared_with_me(pat) == []
        assert sharing.participant_ids(shared) == (owner.id,)
        sharing.share(owner, shared, "pat", "viewer")  # the id may be shared afresh
        assert sharing.authorize(pat, shared, "read") == "viewer"

    def test_an_ended_account_leaves_every_chat_and_its_own_chats_end(
        self, sharing, shared, owner, pat, vic
    ):
        pats_chat = ChatRef(owner_id=pat.id, chat_id="pats")
        sharing.share(pat, pats_chat, "vic", "viewer")
        sharing.account_ended(pat.id)
        assert pat.id not in sharing.participant_ids(shared)
        assert [c.chat_id for c in sharing.shared_with_me(vic)] == [shared.chat_id]

    def test_a_disabled_member_keeps_the_membership_but_is_refused_while_disabled(
        self, sharing, shared, accounts, admin, pat
    ):
        accounts.disable_user(admin.id, pat.id)
        assert pat.id in sharing.participant_ids(shared)
        enabled = accounts.enable_user(admin.id, pat.id)
        assert sharing.authorize(enabled, shared, "send") == "participant"


class TestOwnerContext:
    """What a run in a shared chat may see beyond the chat (issue 28, item 3)."""

    def test_a_chat_shared_with_nobody_runs_as_before(self, sharing, chat):
        assert sharing.run_may_use_owner_context(chat)

    def test_a_shared_chat_does_not_see_the_owners_memory_unless_turned_on(
        self, sharing, shared, owner
    ):
        assert not sharing.run_may_use_owner_context(shared)
        sharing.set_owner_context(owner, shared, True)
        assert sharing.run_may_use_owner_context(shared)
        sharing.set_owner_context(owner, shared, False)
        assert not sharing.run_may_use_owner_context(shared)

    def test_only_the_owner_turns_it_on(self, sharing, shared, pat):
        with pytest.raises(ChatActRefusedError):
            sharing.set_owner_context(pat, shared, True)
        assert not sharing.run_may_use_owner_context(shared)

    def test_the_switch_reads_as_stored_also_while_shared_with_nobody(
        self, sharing, shared, owner, pat, vic
    ):
        """The share dialog's checkbox: the stored switch, not whether runs use it now."""
        assert not sharing.owner_context(owner, shared)
        sharing.set_owner_context(owner, shared, True)
        assert sharing.owner_context(owner, shared)
        sharing.remove_member(owner, shared, pat.id)
        sharing.remove_member(owner, shared, vic.id)
        assert sharing.run_may_use_owner_context(shared)  # shared with nobody: as before
        assert sharing.owner_context(owner, shared)  # the switch is kept for the next share

    def test_only_the_owner_reads_the_switch(self, sharing, shared, owner, pat, stranger):
        sharing.set_owner_context(owner, shared, True)
        with pytest.raises(ChatActRefusedError):
            sharing.owner_context(pat, shared)
        with pytest.raises(ChatNotFoundError):
            sharing.owner_context(stranger, shared)

    def test_a_chat_never_shared_reads_off(self, sharing, chat, owner):
        assert not sharing.owner_context(owner, chat)


class TestConcurrentWriters:
    def test_two_processes_sharing_with_the_same_person_at_once_add_them_once(
        self, sharing, settings, accounts, chat, owner, pat
    ):
        """The duplicate check and the insert run under the scope's write lock."""
        cursor = sharing.change_cursor()
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def share_from(process: Sharing) -> None:
            barrier.wait(timeout=WAIT_S)
            try:
                process.share(owner, chat, "pat", "viewer")
                outcomes.append("added")
            except AlreadyMemberError:
                outcomes.append("refused")

        with Sharing(settings, accounts) as other_process:
            threads = [
                threading.Thread(target=share_from, args=(process,))
                for process in (sharing, other_process)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=WAIT_S)
        assert sorted(outcomes) == ["added", "refused"]
        assert sharing.participant_ids(chat) == (owner.id, pat.id)
        assert [c.kind for c in sharing.changes_since(cursor).changes] == ["added"]
