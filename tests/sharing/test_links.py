"""Read-only share links: a stored snapshot behind a hashed token, listed and revoked by its
owner, gone for every process the moment it is revoked."""

from __future__ import annotations

import base64
import dataclasses

import pytest

from backend.accounts.tokens import hash_secret
from backend.errors import (
    ChatActRefusedError,
    ChatNotFoundError,
    InputTooLargeError,
    InvalidInputError,
    ShareLinkNotFoundError,
)
from backend.sharing import (
    MAX_SNAPSHOT_MESSAGES,
    SHARING_FILE,
    ChatRef,
    SharedSnapshot,
    Sharing,
    SnapshotAttachment,
    SnapshotMessage,
)
from backend.sharing import snapshots as snapshot_rules
from tests.sharing.conftest import message
from tests.support.storage_engines import raw_rows

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 24
PICTURE = SnapshotAttachment(name="kayak.png", media_type="image/png", data=PNG)
BRANCH = (
    message("Where did we leave the kayak?").model_copy(update={"attachments": (PICTURE,)}),
    message("In the boathouse.", author="Guide", role="assistant"),
)


def rows(settings, sql: str) -> list[tuple]:
    return raw_rows(settings.storage, settings.data_dir / SHARING_FILE, sql)


class TestCreatingAndOpening:
    def test_the_link_shows_the_snapshot_and_nothing_else(self, sharing, chat, owner, clock):
        new = sharing.create_link(owner, chat, "Kayak trip", BRANCH)
        assert sharing.open_link(new.token) == SharedSnapshot(
            title="Kayak trip",
            created_at=clock.now,
            messages=tuple(m.model_copy(update={"attachments": ()}) for m in BRANCH),
        )

    def test_a_snapshot_names_no_chat_and_no_person_id(self):
        """What the page can show is exactly these fields: no id of this or another chat."""
        assert set(SharedSnapshot.model_fields) == {"title", "created_at", "messages"}
        assert set(SnapshotMessage.model_fields) == {
            "author",
            "role",
            "text",
            "created_at",
            "attachments",
        }

    def test_files_are_kept_only_when_the_owner_chooses_them(self, sharing, chat, owner):
        without = sharing.create_link(owner, chat, "t", BRANCH)
        with_files = sharing.create_link(owner, chat, "t", BRANCH, include_attachments=True)
        assert sharing.open_link(without.token).messages[0].attachments == ()
        assert sharing.open_link(with_files.token).messages[0].attachments == (PICTURE,)
        assert (without.link.includes_attachments, with_files.link.includes_attachments) == (
            False,
            True,
        )

    def test_the_token_has_at_least_128_bits_and_is_new_each_time(self, sharing, chat, owner):
        tokens = {sharing.create_link(owner, chat, "t", BRANCH).token for _ in range(3)}
        assert len(tokens) == 3
        for token in tokens:
            assert len(base64.urlsafe_b64decode(token + "==")) * 8 >= 128

    def test_only_the_tokens_hash_is_stored(self, sharing, settings, chat, owner):
        new = sharing.create_link(owner, chat, "t", BRANCH)
        stored = rows(settings, "SELECT * FROM share_links")
        assert new.token not in repr(stored)
        assert hash_secret(new.token) in repr(stored)

    def test_only_the_owner_creates_links(self, sharing, shared, pat, stranger):
        with pytest.raises(ChatActRefusedError):
            sharing.create_link(pat, shared, "t", BRANCH)
        with pytest.raises(ChatNotFoundError):
            sharing.create_link(stranger, shared, "t", BRANCH)

    @pytest.mark.parametrize("token", ["", "x" * 10_000, None, "not-a-link-token"])
    def test_an_unknown_or_malformed_token_is_not_found_and_not_repeated(self, sharing, token):
        with pytest.raises(ShareLinkNotFoundError) as missing:
            sharing.open_link(token)
        assert str(missing.value) == ShareLinkNotFoundError.MESSAGE


class TestListingAndRevoking:
    def test_the_owner_lists_their_links_newest_first(self, sharing, chat, owner, pat, clock):
        first = sharing.create_link(owner, chat, "first", BRANCH)
        clock.advance_s(1)
        second = sharing.create_link(owner, ChatRef(owner_id=owner.id, chat_id="b"), "2", BRANCH)
        sharing.create_link(pat, ChatRef(owner_id=pat.id, chat_id="pats"), "pat's", BRANCH)
        assert sharing.list_links(owner) == [second.link, first.link]
        assert first.link.message_count == 2 and first.link.size_bytes > 0

    def test_links_made_in_the_same_millisecond_list_in_one_order_on_both_engines(
        self, sharing, chat, owner
    ):
        """Ties are broken by id in byte order (``COLLATE "C"`` on PostgreSQL, whatever the
        database's collation): ids mix upper and lower case."""
        made = [sharing.create_link(owner, chat, "t", BRANCH).link.id for _ in range(8)]
        assert [link.id for link in sharing.list_links(owner)] == sorted(made)

    def test_a_revoked_link_is_gone_at_once_for_every_process(
        self, sharing, settings, accounts, chat, owner
    ):
        new = sharing.create_link(owner, chat, "t", BRANCH, include_attachments=True)
        with Sharing(settings, accounts) as other_process:
            assert other_process.open_link(new.token).title == "t"
            assert sharing.revoke_link(owner, new.link.id)
            with pytest.raises(ShareLinkNotFoundError):
                other_process.open_link(new.token)
        assert sharing.list_links(owner) == []

    def test_revoking_deletes_the_snapshot_itself(self, sharing, settings, chat, owner):
        new = sharing.create_link(owner, chat, "t", BRANCH, include_attachments=True)
        sharing.revoke_link(owner, new.link.id)
        for table in ("share_links", "share_link_messages", "share_link_files"):
            assert rows(settings, f"SELECT count(*) FROM {table}") == [(0,)], table

    def test_someone_elses_link_cannot_be_revoked_and_reads_as_none(
        self, sharing, chat, owner, pat
    ):
        new = sharing.create_link(owner, chat, "t", BRANCH)
        assert not sharing.revoke_link(pat, new.link.id)
        assert not sharing.revoke_link(owner, "no-such-link")
        assert sharing.open_link(new.token).title == "t"
        assert sharing.revoke_link(owner, new.link.id)
        assert not sharing.revoke_link(owner, new.link.id)

    def test_a_deleted_chats_links_are_not_found_until_undo(self, sharing, chat, owner):
        new = sharing.create_link(owner, chat, "t", BRANCH)
        sharing.chat_deleted(owner, chat)
        with pytest.raises(ShareLinkNotFoundError):
            sharing.open_link(new.token)
        with pytest.raises(ChatNotFoundError):
            sharing.create_link(owner, chat, "t", BRANCH)
        sharing.chat_restored(owner, chat)
        assert sharing.open_link(new.token).title == "t"

    def test_an_ended_chat_or_account_takes_its_links_with_it(self, sharing, chat, owner):
        ended = sharing.create_link(owner, chat, "t", BRANCH)
        other = ChatRef(owner_id=owner.id, chat_id="other")
        kept = sharing.create_link(owner, other, "t", BRANCH)
        sharing.chat_ended(chat)
        with pytest.raises(ShareLinkNotFoundError):
            sharing.open_link(ended.token)
        assert sharing.list_links(owner) == [kept.link]
        sharing.account_ended(owner.id)
        assert sharing.list_links(owner) == []
        with pytest.raises(ShareLinkNotFoundError):
            sharing.open_link(kept.token)


class TestBounds:
    """A snapshot is bounded by the limits a chat lives under; a refused one stores nothing."""

    @pytest.fixture
    def tight(self, settings, accounts, clock):
        tight = dataclasses.replace(
            settings, max_message_bytes=100, max_attachment_bytes=64, model_max_reply_bytes=400
        )
        with Sharing(tight, accounts, clock=clock) as opened:
            yield opened

    def refused(self, sharing, owner, chat, messages, error, **options):
        with pytest.raises(error):
            sharing.create_link(owner, chat, "t", messages, **options)
        assert sharing.list_links(owner) == []

    def test_an_empty_snapshot(self, sharing, chat, owner):
        self.refused(sharing, owner, chat, [], InvalidInputError)

    def test_too_many_messages(self, sharing, chat, owner):
        many = [message("hi")] * (MAX_SNAPSHOT_MESSAGES + 1)
        self.refused(sharing, owner, chat, many, InvalidInputError)

    def test_a_persons_message_over_the_message_limit(self, tight, chat, owner):
        self.refused(tight, owner, chat, [message("x" * 101)], InputTooLargeError)

    def test_a_reply_may_be_as_long_as_a_reply_may_be_and_no_longer(self, tight, chat, owner):
        tight.create_link(owner, chat, "t", [message("x" * 400, role="assistant")])
        tight.revoke_link(owner, tight.list_links(owner)[0].id)
        self.refused(tight, owner, chat, [message("x" * 401, role="assistant")], InputTooLargeError)

    def test_a_file_over_the_upload_limit(self, tight, chat, owner):
        big = PICTURE.model_copy(update={"data": PNG + b"\0" * 64})
        with_big = [message("look").model_copy(update={"attachments": (big,)})]
        self.refused(tight, owner, chat, with_big, InputTooLargeError, include_attachments=True)
        tight.create_link(owner, chat, "t", with_big)  # dropped unless chosen: no limit to meet

    def test_more_files_than_a_message_may_carry(self, sharing, settings, chat, owner):
        files = (PICTURE,) * (settings.max_attachments_per_message + 1)
        crowded = [message("look").model_copy(update={"attachments": files})]
        self.refused(sharing, owner, chat, crowded, InvalidInputError, include_attachments=True)

    @pytest.mark.parametrize("media_type", ["text/html", "image/svg+xml", "application/x-sh"])
    def test_a_file_of_a_type_a_browser_would_run(self, sharing, chat, owner, media_type):
        risky = PICTURE.model_copy(update={"media_type": media_type, "name": "x"})
        page = [message("look").model_copy(update={"attachments": (risky,)})]
        self.refused(sharing, owner, chat, page, InvalidInputError, include_attachments=True)

    def test_a_snapshot_over_the_total_limit(self, sharing, chat, owner, monkeypatch):
        monkeypatch.setattr(snapshot_rules, "MAX_SNAPSHOT_BYTES", 1_000)
        branch = [message("x" * 600), message("y" * 600, role="assistant")]
        self.refused(sharing, owner, chat, branch, InputTooLargeError)
