"""What every sharing operation shares: the store, the clock, the accounts read API, the
feed's bookkeeping, and :meth:`SharingCore.authorize`, the one check before any act.

:class:`backend.sharing.Sharing` is assembled from this base and the operation groups
(:mod:`~backend.sharing.members` for people, :mod:`~backend.sharing.links` for links), as
:mod:`backend.accounts` is, so each group reads on its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from backend.accounts import User
from backend.accounts.lifetimes import EVENT_RETENTION_S
from backend.clock import now_ms
from backend.config import Settings
from backend.errors import (
    AccountDisabledError,
    ChatActRefusedError,
    ChatNotFoundError,
    InvalidInputError,
)
from backend.sharing.pg_store import PgSharingStore
from backend.sharing.roles import (
    ACTS,
    MEMBER_ROLES,
    Act,
    ChatRole,
    MemberRole,
    is_act,
    is_member_role,
)
from backend.sharing.roles import role_allows as _role_allows
from backend.sharing.store import SharingStore
from backend.sharing.values import ChatRef, SharingChangeKind
from backend.storage.closing import Closing
from backend.storage.engines import open_store

SCOPE = "sharing"  # the scope's name on either engine; on SQLite, SHARING_FILE
Clock = Callable[[], int]  # integer milliseconds, as every store of the project


class AccountDirectory(Protocol):
    """What sharing reads of accounts (``backend.accounts.Accounts`` is one): names to ids
    and back. Sharing never writes accounts."""

    def user(self, user_id: str) -> User | None: ...

    def user_by_username(self, username: str) -> User | None: ...


class SharingCore(Closing):
    """The shared state of one sharing database: the ``sharing.sqlite`` file, or the
    ``sharing`` scope on PostgreSQL (``CHATS_STORAGE``)."""

    def __init__(
        self, settings: Settings, accounts: AccountDirectory, *, clock: Clock | None = None
    ) -> None:
        self.settings = settings
        self.accounts = accounts
        self._clock = clock or now_ms
        self._opened = open_store(
            settings, SCOPE, {"sqlite": SharingStore, "postgresql": PgSharingStore}
        )
        self._db = self._opened.scope
        self._store: SharingStore = self._opened.store
        self._listeners: list[Callable[[], None]] = []
        self._listeners_lock = threading.Lock()

    def close(self) -> None:
        self._opened.close()

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` after each commit *of this handle* that wrote feed entries (on
        the committing thread: it must be quick), so the live layer reads
        :meth:`changes_since` at once instead of polling. Other processes' commits are not
        heard here. Returns the call that unsubscribes."""
        with self._listeners_lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._listeners_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _announce(self) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    # ── the one check ───────────────────────────────────────────────

    def authorize(self, person: User, chat: ChatRef, act: Act) -> ChatRole:
        """``person``'s role in ``chat`` if that role may do ``act``; raise otherwise.

        Call it before every act on a chat that may be shared (the UI on each event, the
        runtime before a run), with the user ``Accounts.resolve`` gave for this event: the
        role is read from the store each time (one indexed read), never cached, so a removed
        member is refused at their next act. The owner is whoever's directory holds the chat.

        * someone who is not a member (or the chat is deleted): ``ChatNotFoundError``, the
          same as for a chat that does not exist, so ids cannot be probed;
        * a member whose role does not allow the act: ``ChatActRefusedError`` (act, role);
        * a disabled account: ``AccountDisabledError``; an unknown act: ``InvalidInputError``.
        """
        if not is_act(act):
            raise InvalidInputError(f"an act is one of {', '.join(ACTS)}, not {act!r}")
        if person.disabled:
            raise AccountDisabledError()
        role: ChatRole | None = (
            "owner"
            if person.id == chat.owner_id
            else self._store.live_role(chat.owner_id, chat.chat_id, person.id)
        )
        if role is None:
            raise ChatNotFoundError(chat.chat_id)
        if not _role_allows(role, act):
            raise ChatActRefusedError(act, role)
        return role

    # ── internals ───────────────────────────────────────────────────

    def _now_ms(self) -> int:
        return self._clock()

    def _require_live_chat(self, chat: ChatRef) -> None:
        """In a transaction: the chat is not deleted (a deleted chat is shared with nobody
        and gets no new link until it is restored)."""
        state = self._store.chat_state(chat.owner_id, chat.chat_id)
        if state is not None and state.deleted_at is not None:
            raise ChatNotFoundError(chat.chat_id)

    def _tell(
        self, user_id: str, chat: ChatRef, kind: SharingChangeKind, role: MemberRole | None = None
    ) -> None:
        """In a transaction: one feed entry, and the day-old entries pruned (cheap, indexed)."""
        now = self._now_ms()
        self._store.append_event(user_id, chat.owner_id, chat.chat_id, kind, role, now)
        self._store.prune_events(now - EVENT_RETENTION_S * 1000)
        self._db.after_commit(self._announce)  # once per entry: a repeat wakes a reader twice

    def _delete_links(self, link_ids: list[str]) -> None:
        for link_id in link_ids:
            self._store.delete_link(link_id)


def check_member_role(role: object) -> None:
    if not is_member_role(role):
        raise InvalidInputError(
            f"a member's role is one of {', '.join(MEMBER_ROLES)}, not {role!r}"
        )
