"""Membership: an owner shares a chat with people, changes roles, removes them; a member
leaves; the chat's deletion and an account's end close memberships. Each change writes one
entry per person concerned to the change feed in the same transaction, so every app process
learns of it from :meth:`MembershipOperations.changes_since`.

Names are looked up in accounts before the sharing transaction (another database), and the
refusal for an unknown name and for a disabled account is one text
(``ShareRecipientUnavailableError``): a non-admin owner cannot learn from it which names
exist (docs/sharing.md, "Threats").
"""

from __future__ import annotations

from backend.accounts import User
from backend.errors import (
    AlreadyMemberError,
    CannotShareWithSelfError,
    InvalidUsernameError,
    MemberNotFoundError,
    ShareRecipientUnavailableError,
)
from backend.sharing.core import SharingCore, check_member_role
from backend.sharing.roles import ChatRole, MemberRole
from backend.sharing.values import ChatRef, Member, SharedChat, SharingChanges


class MembershipOperations(SharingCore):
    """Who is in a shared chat (see the module docstring)."""

    # ── the owner ───────────────────────────────────────────────────

    def share(self, actor: User, chat: ChatRef, username: str, role: MemberRole) -> Member:
        """Add the account named ``username`` to ``actor``'s chat as ``role``.

        Refusals: not the owner (``authorize``'s errors), an unknown, malformed or disabled
        name (``ShareRecipientUnavailableError``, one text), oneself
        (``CannotShareWithSelfError``), a member already (``AlreadyMemberError``), a
        deleted chat (``ChatNotFoundError``).
        """
        check_member_role(role)
        self.authorize(actor, chat, "share")  # before any name is looked up
        recipient = self._recipient(username)
        if recipient.id == actor.id:
            raise CannotShareWithSelfError()
        with self._db.transaction():
            self._require_live_chat(chat)
            self._store.ensure_chat(chat.owner_id, chat.chat_id, self._now_ms())
            if self._store.member_role(chat.owner_id, chat.chat_id, recipient.id) is not None:
                raise AlreadyMemberError(chat.chat_id, recipient.id, recipient.username)
            now = self._now_ms()
            self._store.insert_member(chat.owner_id, chat.chat_id, recipient.id, role, now)
            self._tell(recipient.id, chat, "added", role)
        return Member(user_id=recipient.id, username=recipient.username, role=role, since=now)

    def change_role(self, actor: User, chat: ChatRef, member_id: str, role: MemberRole) -> Member:
        """Make a member a participant or a viewer; the same role again changes nothing."""
        check_member_role(role)
        self.authorize(actor, chat, "share")
        with self._db.transaction():
            before = self._member_role(chat, member_id)
            if before != role:
                self._store.set_member_role(
                    chat.owner_id, chat.chat_id, member_id, role, self._now_ms()
                )
                self._tell(member_id, chat, "role_changed", role)
        return next(m for m in self.members(actor, chat) if m.user_id == member_id)

    def remove_member(self, actor: User, chat: ChatRef, member_id: str) -> None:
        """Take the chat away from one member; their tabs lose it (the feed says so)."""
        self.authorize(actor, chat, "share")
        with self._db.transaction():
            self._member_role(chat, member_id)
            self._store.delete_member(chat.owner_id, chat.chat_id, member_id)
            self._tell(member_id, chat, "removed")

    def set_owner_context(self, actor: User, chat: ChatRef, enabled: bool) -> None:
        """The owner's per-chat switch: may runs in this shared chat see the owner's memory,
        other chats and cross-chat search? Off unless turned on (docs/sharing.md)."""
        self.authorize(actor, chat, "share")
        with self._db.transaction():
            self._require_live_chat(chat)
            self._store.ensure_chat(chat.owner_id, chat.chat_id, self._now_ms())
            self._store.set_owner_context(chat.owner_id, chat.chat_id, bool(enabled))

    def owner_context(self, actor: User, chat: ChatRef) -> bool:
        """The owner's switch as stored (what the share dialog's checkbox shows), for the
        owner only: off until turned on, and kept while the chat is shared with nobody (runs
        then see the owner's context anyway; the switch applies once someone is added)."""
        self.authorize(actor, chat, "share")
        state = self._store.chat_state(chat.owner_id, chat.chat_id)
        return state is not None and state.owner_context

    # ── members ─────────────────────────────────────────────────────

    def leave(self, person: User, chat: ChatRef) -> None:
        """A member leaves a chat shared with them (the owner cannot: ``ChatActRefusedError``)."""
        self.authorize(person, chat, "leave")
        with self._db.transaction():
            self._member_role(chat, person.id)
            self._store.delete_member(chat.owner_id, chat.chat_id, person.id)
            self._tell(person.id, chat, "left")

    # ── reading ─────────────────────────────────────────────────────

    def members(self, person: User, chat: ChatRef) -> list[Member]:
        """Everyone in ``chat``, the owner first, then members in the order they were added;
        for the owner and the members only."""
        self.authorize(person, chat, "read")
        with self._db.snapshot():
            rows = self._store.members_of(chat.owner_id, chat.chat_id)
            state = self._store.chat_state(chat.owner_id, chat.chat_id)
        owner_since = self._now_ms() if state is None else state.created_at
        people: list[tuple[str, ChatRole, int]] = [(chat.owner_id, "owner", owner_since), *rows]
        return [
            Member(user_id=user.id, username=user.username, role=role, since=since)
            for user_id, role, since in people
            if (user := self.accounts.user(user_id)) is not None
        ]

    def shared_with_me(self, person: User) -> list[SharedChat]:
        """The live chats others shared with ``person``, newest share first, with each
        owner's username (for the "Shared with me" section)."""
        found = []
        for owner_id, chat_id, role, since in self._store.shared_with(person.id):
            owner = self.accounts.user(owner_id)
            if owner is not None:
                found.append(
                    SharedChat(
                        owner_id=owner_id,
                        owner_username=owner.username,
                        chat_id=chat_id,
                        role=role,
                        since=since,
                    )
                )
        return found

    def participant_ids(self, chat: ChatRef) -> tuple[str, ...]:
        """The conversation record's ``participantIds`` (seed 004): the owner first, then the
        members in the order they were added."""
        return (
            chat.owner_id,
            *(m for m, _, _ in self._store.members_of(chat.owner_id, chat.chat_id)),
        )

    def run_may_use_owner_context(self, chat: ChatRef) -> bool:
        """Whether a run in ``chat`` may read the owner's memory, other chats and cross-chat
        search: always for a chat shared with nobody, else only if the owner turned it on."""
        with self._db.snapshot():
            if not self._store.members_of(chat.owner_id, chat.chat_id):
                return True
            state = self._store.chat_state(chat.owner_id, chat.chat_id)
        return state is not None and state.owner_context

    # ── the chat's and the account's end ────────────────────────────

    def chat_deleted(self, actor: User, chat: ChatRef) -> None:
        """The owner deleted the chat: every member loses it at once (idempotent)."""
        self._chat_deleted_or_restored(actor, chat, deleted=True)

    def chat_restored(self, actor: User, chat: ChatRef) -> None:
        """The owner undid the delete: every member gets it back, with their role."""
        self._chat_deleted_or_restored(actor, chat, deleted=False)

    def _chat_deleted_or_restored(self, actor: User, chat: ChatRef, *, deleted: bool) -> None:
        self.authorize(actor, chat, "delete")
        with self._db.transaction():
            state = self._store.chat_state(chat.owner_id, chat.chat_id)
            if state is None or (state.deleted_at is not None) == deleted:
                return
            now = self._now_ms()
            self._store.set_deleted(chat.owner_id, chat.chat_id, now if deleted else None)
            for member_id, role, _ in self._store.members_of(chat.owner_id, chat.chat_id):
                if deleted:
                    self._tell(member_id, chat, "chat_deleted")
                else:
                    self._tell(member_id, chat, "chat_restored", role)

    def chat_ended(self, chat: ChatRef) -> None:
        """The chat is gone for good (purged after the undo window): its memberships, links
        and switch go with it. Called by the owner's purge, not by a person."""
        with self._db.transaction():
            self._end_chat(chat)

    def account_ended(self, user_id: str) -> None:
        """An account is deleted: its memberships end, and every chat it owned ends for its
        members (with its links). A disabled account keeps its memberships: ``authorize``
        refuses it while disabled, and enabling it gives them back."""
        with self._db.transaction():
            for owner_id, chat_id in self._store.memberships_of(user_id):
                self._tell(user_id, ChatRef(owner_id=owner_id, chat_id=chat_id), "account_ended")
            self._store.delete_memberships_of(user_id)
            for chat_id in self._store.chats_of_owner(user_id):
                self._end_chat(ChatRef(owner_id=user_id, chat_id=chat_id))
            self._delete_links(self._store.link_ids_of_owner(user_id))

    def _end_chat(self, chat: ChatRef) -> None:
        for member_id, _, _ in self._store.members_of(chat.owner_id, chat.chat_id):
            self._tell(member_id, chat, "chat_ended")
        self._store.delete_members_of(chat.owner_id, chat.chat_id)
        self._delete_links(self._store.link_ids_of_chat(chat.owner_id, chat.chat_id))
        self._store.delete_chat(chat.owner_id, chat.chat_id)

    # ── change feed ─────────────────────────────────────────────────

    def change_cursor(self) -> int:
        """Where a new reader of :meth:`changes_since` starts (everything before is past)."""
        return self._store.last_event_seq()

    def changes_since(self, cursor: int) -> SharingChanges:
        """Membership changes after ``cursor``: each app process reads this when told of a
        change (:meth:`subscribe`; one indexed read when nothing changed) and updates the
        tabs of ``changes.user_ids`` (their shared chats) and of the owners of
        ``changes.chats`` (member lists); on ``gap`` (more than a day behind) it re-reads
        every tab's list."""
        last = self._store.last_event_seq()
        if last <= cursor:
            return SharingChanges(cursor=cursor)
        changes = tuple(self._store.events_after(cursor))
        gap = not changes or changes[0].seq > cursor + 1
        return SharingChanges(cursor=changes[-1].seq if changes else last, changes=changes, gap=gap)

    # ── internals ───────────────────────────────────────────────────

    def _recipient(self, username: str) -> User:
        try:
            user = self.accounts.user_by_username(username) if isinstance(username, str) else None
        except InvalidUsernameError:
            user = None  # a name the rules refuse cannot exist: the same refusal
        if user is None or user.disabled:
            raise ShareRecipientUnavailableError()
        return user

    def _member_role(self, chat: ChatRef, member_id: str) -> MemberRole:
        role = self._store.member_role(chat.owner_id, chat.chat_id, member_id)
        if role is None:
            raise MemberNotFoundError(chat.chat_id, member_id)
        return role
