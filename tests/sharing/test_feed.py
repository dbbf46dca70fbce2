"""The membership feed: how every app process learns at once that a person gained or lost a
chat (the live wiring follows it), across processes, on both engines."""

from __future__ import annotations

import pytest

from backend.errors import AlreadyMemberError
from backend.sharing import ChatRef, Sharing

DAY_S = 24 * 3600


def kinds(sharing: Sharing, cursor: int) -> list[tuple[str, str, str | None]]:
    return [(c.user_id, c.kind, c.role) for c in sharing.changes_since(cursor).changes]


class TestTheFeed:
    def test_a_new_reader_starts_after_everything_already_past(self, sharing, shared):
        assert sharing.changes_since(sharing.change_cursor()).changes == ()

    def test_every_membership_change_names_the_person_the_chat_and_the_role_after(
        self, sharing, chat, owner, pat, vic
    ):
        cursor = sharing.change_cursor()
        sharing.share(owner, chat, "pat", "participant")
        sharing.change_role(owner, chat, pat.id, "viewer")
        sharing.share(owner, chat, "vic", "viewer")
        sharing.leave(vic, chat)
        sharing.chat_deleted(owner, chat)
        sharing.chat_restored(owner, chat)
        sharing.remove_member(owner, chat, pat.id)
        assert kinds(sharing, cursor) == [
            (pat.id, "added", "participant"),
            (pat.id, "role_changed", "viewer"),
            (vic.id, "added", "viewer"),
            (vic.id, "left", None),
            (pat.id, "chat_deleted", None),
            (pat.id, "chat_restored", "viewer"),
            (pat.id, "removed", None),
        ]
        changes = sharing.changes_since(cursor)
        assert changes.chats == {chat}
        assert [c.lost for c in changes.changes] == [False, False, False, True, True, False, True]

    def test_ending_a_chat_or_an_account_tells_each_member(self, sharing, shared, owner, pat, vic):
        pats = ChatRef(owner_id=pat.id, chat_id="pats")
        sharing.share(pat, pats, "vic", "viewer")
        cursor = sharing.change_cursor()
        sharing.account_ended(pat.id)
        sharing.chat_ended(shared)
        assert kinds(sharing, cursor) == [
            (pat.id, "account_ended", None),
            (vic.id, "chat_ended", None),
            (vic.id, "chat_ended", None),
        ]

    def test_reading_from_the_returned_cursor_gives_only_newer_changes(
        self, sharing, chat, owner, pat
    ):
        first = sharing.changes_since(sharing.change_cursor())
        sharing.share(owner, chat, "pat", "viewer")
        second = sharing.changes_since(first.cursor)
        assert [c.kind for c in second.changes] == ["added"]
        assert sharing.changes_since(second.cursor).changes == ()

    def test_what_changes_nothing_says_nothing(self, sharing, shared, owner, pat):
        cursor = sharing.change_cursor()
        sharing.change_role(owner, shared, pat.id, "participant")  # the same role
        sharing.chat_restored(owner, shared)  # not deleted
        with pytest.raises(AlreadyMemberError):  # refused: rolled back
            sharing.share(owner, shared, "pat", "viewer")
        sharing.members(owner, shared)
        sharing.shared_with_me(pat)
        assert sharing.changes_since(cursor).changes == ()

    def test_a_subscriber_hears_each_committed_change_made_through_this_handle(
        self, sharing, shared, owner, pat
    ):
        """The live layer's cue to read the feed at once (no poll while nothing changes)."""
        heard: list[int] = []
        unsubscribe = sharing.subscribe(lambda: heard.append(sharing.change_cursor()))
        cursor = sharing.change_cursor()
        with pytest.raises(AlreadyMemberError):  # refused: rolled back, nothing to hear
            sharing.share(owner, shared, "pat", "viewer")
        sharing.members(owner, shared)  # a read: nothing to hear
        assert heard == []
        sharing.remove_member(owner, shared, pat.id)
        assert heard and heard[-1] > cursor  # heard after the entry is readable
        unsubscribe()
        sharing.share(owner, shared, "pat", "viewer")
        assert len(heard) == 1

    def test_another_process_sees_a_change_made_here_at_its_next_read(
        self, sharing, settings, accounts, chat, owner, pat
    ):
        with Sharing(settings, accounts) as worker:
            cursor = worker.change_cursor()
            sharing.share(owner, chat, "pat", "participant")
            changes = worker.changes_since(cursor)
            assert changes.user_ids == {pat.id}
            assert worker.authorize(pat, chat, "send") == "participant"
            sharing.remove_member(owner, chat, pat.id)
            assert [c.kind for c in worker.changes_since(changes.cursor).changes] == ["removed"]
            assert worker.shared_with_me(pat) == []

    def test_a_reader_behind_the_retention_is_told_there_is_a_gap(
        self, sharing, chat, owner, pat, vic, clock
    ):
        cursor = sharing.change_cursor()
        sharing.share(owner, chat, "pat", "participant")
        clock.advance_s(DAY_S + 1)
        sharing.share(owner, chat, "vic", "viewer")  # each write prunes day-old entries
        changes = sharing.changes_since(cursor)
        assert changes.gap
        assert [c.user_id for c in changes.changes] == [vic.id]
        assert not sharing.changes_since(changes.cursor).gap

    def test_numbers_only_grow_also_after_pruning(self, sharing, chat, owner, pat, clock):
        sharing.share(owner, chat, "pat", "participant")
        before = sharing.change_cursor()
        clock.advance_s(DAY_S + 1)
        sharing.remove_member(owner, chat, pat.id)
        assert sharing.change_cursor() == before + 1
