"""What every accounts operation shares: the store, the clock, the hasher, and the few
multi-step writes more than one operation makes (creating a user, ending sign-ins).

:class:`backend.accounts.Accounts` is assembled from this base and the operation groups
(:mod:`~backend.accounts.service` for people, :mod:`~backend.accounts.admin` for admins), so
each group reads on its own and no module grows into a hub.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from backend.accounts import throttle
from backend.accounts.adoption import former_local_directory
from backend.accounts.names import mint_user_id
from backend.accounts.passwords import Passwords, PasswordWork, check_password_policy
from backend.accounts.pg_store import PgAccountsStore
from backend.accounts.setup_file import remove_setup_code
from backend.accounts.store import SETUP_CODE_KEY, AccountsStore
from backend.accounts.values import AccountChangeKind, Role, User
from backend.clock import now_ms
from backend.config import Settings
from backend.data_folder import ACCOUNTS_FILE, SETUP_CODE_FILE
from backend.errors import InvalidCredentialsError, StorageError, ThrottledError
from backend.storage import IntegrityError
from backend.storage.closing import Closing
from backend.storage.engines import open_store

SCOPE = "accounts"  # the scope's name on either engine; on SQLite, ACCOUNTS_FILE
Clock = Callable[[], int]  # integer milliseconds, as every store of the project
_ID_ATTEMPTS = 5  # minting retries on an id collision (30 random bits per slug)


class AccountsCore(Closing):
    """The shared state of one accounts database (see the module docstring): the
    ``accounts.sqlite`` file, or the ``accounts`` scope on PostgreSQL (``CHATS_STORAGE``)."""

    def __init__(self, settings: Settings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self._clock = clock or now_ms
        self._passwords = Passwords(settings.password_hash_profile)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.path: Path = settings.data_dir / ACCOUNTS_FILE
        self._setup_code_path = settings.data_dir / SETUP_CODE_FILE
        self._opened = open_store(
            settings, SCOPE, {"sqlite": AccountsStore, "postgresql": PgAccountsStore}
        )
        self._db = self._opened.scope
        self._store: AccountsStore = self._opened.store
        self.password_work = PasswordWork()  # async callers run hashing calls here

    def close(self) -> None:
        self.password_work.close()
        self._opened.close()

    def _now_ms(self) -> int:
        return self._clock()

    def _hash_new_password(self, password: str) -> str:
        """Check the policy and hash; done before a transaction (hashing takes ~0.1-0.3 s,
        and the write lock must not wait for it)."""
        return self._passwords.hash(check_password_policy(password))

    def _insert_user(self, username: str, role: Role, password_hash: str | None) -> User:
        """Create one account; call inside a transaction.

        The first admin of a data folder adopts the former single local user's directory:
        when no admin was ever made, and the engine holds ``<CHATS_USER>``'s directory database,
        and no account holds that id yet, the new admin's id *is* that id, so their chats are
        where they were (see :mod:`backend.accounts.adoption`).
        """
        now = self._now_ms()
        store = self._store
        if role == "admin" and store.count_admins() == 0:
            adopted = former_local_directory(self.settings, self._opened.storage)
            if adopted is not None and store.user_by_id(adopted) is None:
                return self._insert_with_id(adopted, username, role, password_hash, now)
        for _ in range(_ID_ATTEMPTS):
            try:
                return self._insert_with_id(
                    mint_user_id(username), username, role, password_hash, now
                )
            except IntegrityError:
                continue  # the minted id exists (the username did not: that raised)
        raise StorageError("could not mint a free user id")

    def _insert_with_id(
        self, user_id: str, username: str, role: Role, password_hash: str | None, now: int
    ) -> User:
        user = self._store.insert_user(user_id, username, role, password_hash, now)
        if role == "admin":  # setup is done once an admin exists
            self._store.delete_setting(SETUP_CODE_KEY)
            self._db.after_commit(lambda: remove_setup_code(self._setup_code_path))
        return user

    def _end_sign_ins(
        self, user_id: str, kind: AccountChangeKind, keep_hash: str | None = None
    ) -> int:
        """End a user's sessions (all but ``keep_hash``) and tell the change feed; in a
        transaction."""
        ended = self._store.delete_user_sign_ins(user_id, keep_hash)
        self._store.append_event(user_id, kind, self._now_ms())
        return ended

    def _begin_attempt(self, account_key: str | None, address: str) -> list[tuple[str, int]]:
        """Count an attempt as a failure *before* checking it, under the write lock.

        Checking the limit and recording the attempt in one ``BEGIN IMMEDIATE`` transaction
        means parallel requests cannot all pass the check before any failure is written. A
        successful attempt takes its rows back (:meth:`_attempt_succeeded`).
        """
        now = self._now_ms()
        since = now - throttle.FAILURE_WINDOW_S * 1000
        buckets: list[tuple[str, str, int]] = []  # (scope, key, limit)
        # No address (a caller that has none, e.g. a password change) is no shared bucket:
        # every such caller would be throttled together.
        if address:
            key = throttle.address_key(address)
            buckets.append((throttle.ADDRESS_SCOPE, key, throttle.MAX_FAILURES_PER_ADDRESS))
        if account_key is not None:
            buckets.append((throttle.ACCOUNT_SCOPE, account_key, throttle.MAX_FAILURES_PER_ACCOUNT))
        with self._db.transaction():
            waits = [
                throttle.retry_after_s(
                    self._store.failures_since(scope, key, since),
                    limit,
                    now,
                    throttle.FAILURE_WINDOW_S,
                )
                for scope, key, limit in buckets
            ]
            if max(waits, default=0):  # the longest wait: retrying sooner would be refused
                raise ThrottledError(max(waits))
            return [
                (scope, self._store.record_failure(scope, key, now)) for scope, key, _ in buckets
            ]

    def _attempt_succeeded(self, attempt: list[tuple[str, int]], account_key: str | None) -> None:
        """In a transaction: forget this attempt, and the account's earlier failures."""
        for _scope, rowid in attempt:
            self._store.delete_failure(rowid)
        if account_key is not None:
            self._store.clear_failures(throttle.ACCOUNT_SCOPE, account_key)

    def _check_password(self, username: str, password: str, address: str) -> User:
        """The user whose password this is, or InvalidCredentialsError / ThrottledError.

        Unknown user, wrong password and disabled account raise the same error after the same
        work (an argon2 verification each), so neither the text nor the time tells them apart.
        """
        attempt = self._begin_attempt(username, address)
        found = self._store.password_hash(username)
        user, stored = found if found is not None else (None, None)
        if not self._passwords.verify(stored, password) or user is None or user.disabled:
            raise InvalidCredentialsError()
        with self._db.transaction():
            self._attempt_succeeded(attempt, username)
            if stored is not None and self._passwords.needs_rehash(stored):
                self._store.rehash_password(user.id, self._passwords.hash(password))
        return user
