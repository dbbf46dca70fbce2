"""The change feed: what lets every worker sign tabs out live, across processes."""

from __future__ import annotations

from backend.accounts import Accounts
from tests.accounts.conftest import ADDRESS, PASSWORD

DAY_S = 24 * 3600


class TestChangeFeed:
    def test_a_new_reader_starts_after_everything_already_past(self, accounts, admin, alice):
        accounts.disable_user(admin.id, alice.id)
        cursor = accounts.change_cursor()
        assert accounts.changes_since(cursor).changes == ()

    def test_each_session_ending_change_names_its_user(self, accounts, admin, alice):
        cursor = accounts.change_cursor()
        token = accounts.sign_in("alice", PASSWORD, ADDRESS).token
        accounts.sign_out(token)
        accounts.sign_out_everywhere(alice.id)
        accounts.change_password(alice.id, PASSWORD, "a brand new passphrase")
        accounts.reset_password(admin.id, alice.id, PASSWORD)
        accounts.disable_user(admin.id, alice.id)
        accounts.enable_user(admin.id, alice.id)
        changes = accounts.changes_since(cursor)
        assert [change.kind for change in changes.changes] == [
            "signed_out",
            "signed_out_everywhere",
            "password_changed",
            "password_changed",
            "disabled",
            "enabled",
        ]
        assert changes.user_ids == {alice.id}
        assert not changes.gap

    def test_reading_from_the_returned_cursor_gives_only_newer_changes(
        self, accounts, admin, alice
    ):
        first = accounts.changes_since(accounts.change_cursor())
        accounts.disable_user(admin.id, alice.id)
        second = accounts.changes_since(first.cursor)
        assert [change.kind for change in second.changes] == ["disabled"]
        assert accounts.changes_since(second.cursor).changes == ()

    def test_signing_in_or_resolving_adds_nothing(self, accounts, alice):
        cursor = accounts.change_cursor()
        accounts.resolve(accounts.sign_in("alice", PASSWORD, ADDRESS).token)
        assert accounts.changes_since(cursor).changes == ()

    def test_another_process_sees_a_disable_made_here(self, accounts, admin, alice, settings):
        with Accounts(settings) as worker:
            token = worker.sign_in("alice", PASSWORD, ADDRESS).token
            cursor = worker.change_cursor()
            accounts.disable_user(admin.id, alice.id)
            assert worker.changes_since(cursor).user_ids == {alice.id}
            assert worker.resolve(token) is None

    def test_a_reader_behind_the_retention_is_told_there_is_a_gap(
        self, accounts, admin, alice, clock
    ):
        cursor = accounts.change_cursor()
        accounts.disable_user(admin.id, alice.id)
        accounts.enable_user(admin.id, alice.id)
        clock.advance_s(2 * DAY_S)
        accounts.sign_in("root-admin", PASSWORD, ADDRESS)  # sweeps old rows
        accounts.sign_out_everywhere(alice.id)
        changes = accounts.changes_since(cursor)
        assert changes.gap
        assert [change.kind for change in changes.changes] == ["signed_out_everywhere"]
