"""The accounts service: the one place that decides who a tab is.

:class:`Accounts` over ``<data_dir>/accounts.sqlite``. What the UI does with it:

* **Every event** of a tab calls :meth:`Accounts.resolve` with the tab's sign-in token (in
  ``header`` mode :meth:`Accounts.identity_from_headers`) and uses the returned
  :class:`~backend.accounts.values.User` (id and role) for that event only; ``None`` means
  "signed out": show the sign-in page. Nothing is cached per connection, so a demoted,
  disabled or signed-out person loses access at their next event.
* **Live sign-out** of tabs that send no event: each worker polls :meth:`changes_since` about
  once a second (cheap: one indexed read) with the cursor it got last time (start from
  :meth:`change_cursor`); for every user id in ``changes.user_ids`` it re-resolves the tokens
  of that user's open tabs and signs out the ones that now resolve to ``None``. When
  ``changes.gap`` is true (the worker fell more than a day behind), re-resolve every tab.
  Sign-out ends one sign-in, so every tab of that browser (they share the cookie) goes at once.

* **Addresses.** Pass the client's address to ``sign_in`` / ``create_first_admin`` /
  ``sign_up`` as :func:`backend.accounts.modes.client_address` gives it (the peer, or behind a
  trusted proxy the client it forwarded for): sign-in is throttled per address too.

Sign-ins: a random 256-bit token goes to the browser; only its SHA-256 is stored. A sign-in
lives ``CHATS_SESSION_TTL_S`` since its last renewal and is renewed when used past half-life
(:mod:`backend.accounts.lifetimes`). Timestamps are integer ms from the injected ``clock``.
"""

from __future__ import annotations

from collections.abc import Mapping

from backend.accounts import lifetimes, modes
from backend.accounts.admin import AdminOperations
from backend.accounts.names import MAX_USERNAME_CHARS, normalize_username
from backend.accounts.passwords import check_password_policy
from backend.accounts.setup_file import read_setup_code, remove_setup_code, write_setup_code
from backend.accounts.store import SETUP_CODE_KEY, SIGNUP_POLICY_KEY
from backend.accounts.throttle import FAILURE_WINDOW_S
from backend.accounts.tokens import (
    hash_secret,
    hash_setup_code,
    new_setup_code,
    new_token,
    setup_code_matches,
)
from backend.accounts.values import (
    DEFAULT_SIGNUP_POLICY,
    SIGNUP_POLICIES,
    AccountChanges,
    SignedIn,
    SignupPolicy,
    User,
)
from backend.errors import (
    AccountDisabledError,
    InvalidCredentialsError,
    InvalidInviteError,
    InvalidSetupCodeError,
    InvalidUsernameError,
    SignupRefusedError,
    UsernameTakenError,
)

MAX_TOKEN_CHARS = 512  # far above a real token; anything longer is refused unread


class Accounts(AdminOperations):
    """Accounts, sign-ins, sign-up and setup over one ``accounts.sqlite``.

    Safe to share between threads, and between processes on one data folder (each opens its
    own ``Accounts``). Every method is synchronous: async callers offload it, and run the ones
    that hash or verify a password (sign-in, sign-up, setup, password change) through
    ``password_work``, never the default thread pool.
    """

    # ── first start ─────────────────────────────────────────────────

    def needs_setup(self) -> bool:
        """True while no active admin exists: the UI shows the setup form."""
        return self._store.count_active_admins() == 0

    def setup_code_for_console(self) -> str | None:
        """The one-time setup code to print on the server console; None once set up.

        The same code on every call (any process) until the first admin exists; made on the
        first call (see :mod:`backend.accounts.setup_file` for where it is kept).
        """
        with self._db.transaction():
            if self._store.count_active_admins():
                self._db.after_commit(lambda: remove_setup_code(self._setup_code_path))
                return None
            stored = self._store.setting(SETUP_CODE_KEY)
            kept = read_setup_code(self._setup_code_path)
            if stored is not None and kept is not None and setup_code_matches(kept, stored):
                return kept
            code = new_setup_code()
            write_setup_code(self._setup_code_path, code)  # a rollback leaves a stale file,
            self._store.put_setting(SETUP_CODE_KEY, hash_setup_code(code))  # replaced next time
            return code

    def create_first_admin(
        self, setup_code: str, username: str, password: str, address: str = ""
    ) -> SignedIn:
        """The setup form: make the first admin and sign them in. Works once.

        Wrong code, no code printed yet, or an admin already there: InvalidSetupCodeError
        (one text). Guesses are throttled per address like sign-in attempts.
        """
        name = normalize_username(username)
        check_password_policy(password)
        attempt = self._begin_attempt(None, address)
        self._check_setup_code(setup_code)  # before argon2: a refused post costs no hash
        password_hash = self._passwords.hash(password)
        with self._db.transaction():
            self._check_setup_code(setup_code)  # again, under the write lock
            user = self._insert_user(name, "admin", password_hash)
            self._attempt_succeeded(attempt, None)
            return self._new_sign_in(user, address)

    def _check_setup_code(self, setup_code: str) -> None:
        stored = self._store.setting(SETUP_CODE_KEY)
        # Compared even when nothing is stored, so both refusals take the same time.
        matches = setup_code_matches(str(setup_code), stored or hash_setup_code(""))
        if stored is None or not matches or self._store.count_active_admins():
            raise InvalidSetupCodeError()

    # ── signing in ────────────────────────────────────────────────────

    def sign_in(self, username: str, password: str, address: str) -> SignedIn:
        """A new sign-in for the right password; InvalidCredentialsError / ThrottledError."""
        name = _account_key(username)
        if not isinstance(password, str):
            raise InvalidCredentialsError()
        user = self._check_password(name, password, address)
        with self._db.transaction():
            self._sweep()
            return self._new_sign_in(user, address)

    def resolve(self, token: str | None) -> User | None:
        """The signed-in user of ``token``, or None (unknown, expired, signed out, disabled).

        Renews the sign-in when it is past half its lifetime. Call it on every event.
        """
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            return None
        token_hash = hash_secret(token)
        found = self._store.sign_in_user(token_hash)
        if found is None:
            return None
        user, expires_at = found
        now = self._now_ms()
        if not lifetimes.is_live(expires_at, now) or user.disabled:
            return None
        ttl = self.settings.sign_in_ttl_s
        if lifetimes.needs_renewal(expires_at, now, ttl):
            self._store.renew_sign_in(token_hash, lifetimes.expires_at(now, ttl))
        return user

    def sign_out(self, token: str) -> None:
        """End this sign-in: every tab holding the token is signed out (see the feed)."""
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            return
        with self._db.transaction():
            user_id = self._store.delete_sign_in(hash_secret(token))
            if user_id is not None:
                self._store.append_event(user_id, "signed_out", self._now_ms())

    def sign_out_everywhere(self, user_id: str, keep_token: str | None = None) -> int:
        """End every sign-in of ``user_id`` except ``keep_token``'s; return how many ended."""
        keep = hash_secret(keep_token) if keep_token else None
        with self._db.transaction():
            return self._end_sign_ins(user_id, "signed_out_everywhere", keep)

    def change_password(
        self,
        user_id: str,
        old_password: str,
        new_password: str,
        keep_token: str | None = None,
        address: str = "",
    ) -> None:
        """Change one's own password; every other sign-in ends (``keep_token``'s stays).

        A wrong old password is InvalidCredentialsError and counts toward the throttle.
        """
        user = self._store.user_by_id(user_id)
        if user is None or not isinstance(old_password, str):
            raise InvalidCredentialsError()
        check_password_policy(new_password)  # refuse a bad new one before any verification
        self._check_password(user.username, old_password, address)
        password_hash = self._hash_new_password(new_password)
        keep = hash_secret(keep_token) if keep_token else None
        with self._db.transaction():
            self._store.set_password(user_id, password_hash, self._now_ms())
            self._end_sign_ins(user_id, "password_changed", keep)

    # ── sign-up ─────────────────────────────────────────────────────

    def signup_policy(self) -> SignupPolicy:
        stored = self._store.setting(SIGNUP_POLICY_KEY)
        for policy in SIGNUP_POLICIES:
            if policy == stored:
                return policy
        return DEFAULT_SIGNUP_POLICY

    def sign_up(
        self, username: str, password: str, invite: str | None = None, address: str = ""
    ) -> SignedIn:
        """Create an account under the admin's policy and sign it in.

        ``closed``: SignupRefusedError. ``invite``: needs a live invite token (used up here;
        InvalidInviteError otherwise). ``open``: anyone; an invite, if given, is ignored.
        """
        if self.signup_policy() == "closed":
            raise SignupRefusedError("closed")
        if self.signup_policy() == "invite" and not invite:
            raise SignupRefusedError("invite")
        if self.signup_policy() == "invite" and not self._invite_is_live(invite or ""):
            raise InvalidInviteError()  # before argon2: a made-up invite costs no hash
        name = normalize_username(username)
        password_hash = self._hash_new_password(password)
        with self._db.transaction():
            policy = self.signup_policy()  # again, under the write lock
            if policy != "open" and (policy == "closed" or not invite):
                raise SignupRefusedError(policy)
            user = self._insert_user(name, "user", password_hash)
            if policy == "invite":
                claimed = len(invite or "") <= MAX_TOKEN_CHARS and self._store.claim_invite(
                    hash_secret(invite or ""), user.id, self._now_ms()
                )
                if not claimed:
                    raise InvalidInviteError()  # rolls the new account back
            return self._new_sign_in(user, address)

    def _invite_is_live(self, invite: str) -> bool:
        return len(invite) <= MAX_TOKEN_CHARS and self._store.invite_is_live(
            hash_secret(invite), self._now_ms()
        )

    # ── header mode ─────────────────────────────────────────────────

    def identity_from_headers(self, headers: Mapping[str, str], peer_address: str) -> User:
        """The person a trusted proxy named; their account is created on first sight.

        UntrustedProxyError / MissingIdentityHeaderError (see :mod:`backend.accounts.modes`),
        InvalidUsernameError for a name the username rules refuse, AccountDisabledError.
        """
        name = normalize_username(modes.header_username(headers, peer_address, self.settings))
        user = self._store.user_by_username(name)
        if user is None:
            try:
                with self._db.transaction():
                    user = self._insert_user(name, "user", None)
            except UsernameTakenError:  # another worker provisioned them just now
                user = self._store.user_by_username(name)
        if user is None or user.disabled:
            raise AccountDisabledError()
        return user

    # ── change feed ─────────────────────────────────────────────────

    def change_cursor(self) -> int:
        """Where a new reader of :meth:`changes_since` starts (everything before is past)."""
        return self._store.last_event_seq()

    def changes_since(self, cursor: int) -> AccountChanges:
        """Changes after ``cursor`` that may have ended sessions (see the module docstring)."""
        if self._store.last_event_seq() <= cursor:
            return AccountChanges(cursor=cursor)
        changes = tuple(self._store.events_after(cursor))
        gap = not changes or changes[0].seq > cursor + 1
        last = changes[-1].seq if changes else self._store.last_event_seq()
        return AccountChanges(cursor=last, changes=changes, gap=gap)

    # ── internals ───────────────────────────────────────────────────

    def _new_sign_in(self, user: User, address: str) -> SignedIn:
        """In a transaction: mint a token, store its hash."""
        token = new_token()
        now = self._now_ms()
        expires_at = lifetimes.expires_at(now, self.settings.sign_in_ttl_s)
        self._store.insert_sign_in(hash_secret(token), user.id, now, expires_at, address[:64])
        return SignedIn(token=token, user=user, expires_at=expires_at)

    def _sweep(self) -> None:
        """Drop rows nobody can use any more; cheap (indexed), run on each sign-in."""
        now = self._now_ms()
        self._store.delete_expired_sign_ins(now)
        self._store.prune_failures(now - FAILURE_WINDOW_S * 1000)
        self._store.prune_events(now - lifetimes.EVENT_RETENTION_S * 1000)


def _account_key(username: object) -> str:
    """The throttling and look-up key of a typed username.

    A name the rules refuse cannot exist, but it is still throttled (and verified against the
    dummy hash) like any other, so malformed and unknown names look the same from outside.
    """
    try:
        return normalize_username(username)
    except InvalidUsernameError:
        raw = username if isinstance(username, str) else repr(username)
        return raw.strip().casefold()[:MAX_USERNAME_CHARS]
