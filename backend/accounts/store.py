"""``accounts.sqlite``: the tables of the accounts service, and every SQL statement on them.

Why :class:`backend.storage.Database` and not a SQLModel/SQLAlchemy engine: several processes
(each Reflex worker, the ``chats`` CLI) write this one file at once. ``Database`` already
gives every store here what that needs, tested: WAL with the switch retried while another
process creates the file, a busy timeout, ``BEGIN IMMEDIATE`` transactions (a read-then-write
such as "is this the first admin?" takes the write lock up front, so two processes cannot both
see "no admin" and no deadlock arises upgrading a read lock), append-only named migrations
applied under that same lock, and ``sqlite3.Error`` translated into ``StorageError``. The
values handed out are SQLModel classes (:mod:`backend.accounts.values`).

Tables (component ``accounts``)::

    users(id PK, username UNIQUE, role, password_hash, disabled_at,
          created_at, updated_at, password_changed_at)              WITHOUT ROWID
    sessions(token_hash PK, user_id, created_at, expires_at, address)   WITHOUT ROWID
    invites(id PK, token_hash UNIQUE, created_by, created_at, expires_at,
            used_at, used_by, revoked_at)                            WITHOUT ROWID
    failed_attempts(scope, key, at)          sign-in throttling (backend.accounts.throttle)
    account_settings(key PK, value)          sign-up policy, setup-code hash   WITHOUT ROWID
    account_events(seq PK AUTOINCREMENT, user_id, kind, at)   the change feed

Invariants: no plain secret is ever written (tokens and the setup code as SHA-256, passwords
as argon2id); a sign-in (a ``sessions`` row) exists only while it can be used (sign-out
deletes it, expiry is checked on read and swept); ``account_events.seq`` only grows
(AUTOINCREMENT never reuses a pruned number, so a reader's cursor stays meaningful).

Callers (:mod:`backend.accounts.service`) own transactions; this module never commits.
Its PostgreSQL twin, :mod:`backend.accounts.pg_store`, inherits every statement that reads
the same on both engines and overrides the few that do not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from backend.accounts.values import AccountChange, Invite, User
from backend.errors import UsernameTakenError
from backend.storage import IntegrityError, Row, Scope

COMPONENT = "accounts"
SIGNUP_POLICY_KEY = "signup_policy"
SETUP_CODE_KEY = "setup_code_hash"


def _m001_accounts(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE users (
            id TEXT PRIMARY KEY,
            username TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL CHECK (role IN ('admin', 'user')),
            password_hash TEXT,
            disabled_at INTEGER,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            password_changed_at INTEGER
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE sessions (
            token_hash TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            address TEXT NOT NULL DEFAULT ''
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX sessions_by_user ON sessions (user_id)")
    db.execute("CREATE INDEX sessions_by_expiry ON sessions (expires_at)")
    db.execute(
        """
        CREATE TABLE invites (
            id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            created_by TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            used_at INTEGER,
            used_by TEXT,
            revoked_at INTEGER
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE TABLE failed_attempts (scope TEXT NOT NULL, key TEXT NOT NULL, at INTEGER)")
    db.execute("CREATE INDEX failed_attempts_by_key ON failed_attempts (scope, key, at)")
    db.execute("CREATE INDEX failed_attempts_by_time ON failed_attempts (at)")
    db.execute(
        "CREATE TABLE account_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        """
        CREATE TABLE account_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            at INTEGER NOT NULL
        )
        """
    )


MIGRATIONS = (_m001_accounts,)

_USER_COLUMNS = (
    "id, username, role, password_hash, disabled_at, created_at, updated_at, password_changed_at"
)
_INSERT_USER = f"INSERT INTO users ({_USER_COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?, ?, ?)"
_USER_BY_ID = f"SELECT {_USER_COLUMNS} FROM users WHERE id = ?"
_USER_BY_USERNAME = f"SELECT {_USER_COLUMNS} FROM users WHERE username = ?"
_LIST_USERS = f"SELECT {_USER_COLUMNS} FROM users ORDER BY username"
_COUNT_USERS = "SELECT count(*) FROM users"
_COUNT_ADMINS = "SELECT count(*) FROM users WHERE role = 'admin'"
_COUNT_ACTIVE_ADMINS = "SELECT count(*) FROM users WHERE role = 'admin' AND disabled_at IS NULL"
_SET_PASSWORD = (
    "UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ? WHERE id = ?"
)
_REHASH_PASSWORD = "UPDATE users SET password_hash = ? WHERE id = ?"
_SET_ROLE = "UPDATE users SET role = ?, updated_at = ? WHERE id = ?"
_SET_DISABLED = "UPDATE users SET disabled_at = ?, updated_at = ? WHERE id = ?"

_INSERT_SIGN_IN = (
    "INSERT INTO sessions (token_hash, user_id, created_at, expires_at, address) "
    "VALUES (?, ?, ?, ?, ?)"
)
_SIGN_IN_USER = (
    "SELECT s.expires_at AS sign_in_expires_at, u.* "
    "FROM sessions AS s JOIN users AS u ON u.id = s.user_id WHERE s.token_hash = ?"
)
_RENEW_SIGN_IN = "UPDATE sessions SET expires_at = ? WHERE token_hash = ?"
_DELETE_SIGN_IN = "DELETE FROM sessions WHERE token_hash = ? RETURNING user_id"
_DELETE_USER_SIGN_INS = "DELETE FROM sessions WHERE user_id = ? AND token_hash IS NOT ?"
_DELETE_EXPIRED_SIGN_INS = "DELETE FROM sessions WHERE expires_at <= ?"
_COUNT_USER_SIGN_INS = "SELECT count(*) FROM sessions WHERE user_id = ? AND expires_at > ?"

_INSERT_INVITE = (
    "INSERT INTO invites (id, token_hash, created_by, created_at, expires_at) "
    "VALUES (?, ?, ?, ?, ?)"
)
_INVITE_COLUMNS = "id, created_by, created_at, expires_at, used_at, used_by, revoked_at"
_CLAIM_INVITE = (
    "UPDATE invites SET used_at = ?, used_by = ? WHERE token_hash = ? AND used_at IS NULL "
    "AND revoked_at IS NULL AND expires_at > ? RETURNING id"
)
_LIVE_INVITE = (
    "SELECT 1 FROM invites WHERE token_hash = ? AND used_at IS NULL AND revoked_at IS NULL "
    "AND expires_at > ?"
)
_LIST_INVITES = f"SELECT {_INVITE_COLUMNS} FROM invites ORDER BY created_at DESC, id"
_REVOKE_INVITE = "UPDATE invites SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"

_INSERT_FAILURE = "INSERT INTO failed_attempts (scope, key, at) VALUES (?, ?, ?) RETURNING rowid"
_FAILURES_SINCE = "SELECT at FROM failed_attempts WHERE scope = ? AND key = ? AND at > ?"
_DELETE_FAILURE = "DELETE FROM failed_attempts WHERE rowid = ?"
_CLEAR_FAILURES = "DELETE FROM failed_attempts WHERE scope = ? AND key = ?"
_PRUNE_FAILURES = "DELETE FROM failed_attempts WHERE at <= ?"

_GET_SETTING = "SELECT value FROM account_settings WHERE key = ?"
_PUT_SETTING = (
    "INSERT INTO account_settings (key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_DELETE_SETTING = "DELETE FROM account_settings WHERE key = ?"

_APPEND_EVENT = "INSERT INTO account_events (user_id, kind, at) VALUES (?, ?, ?)"
_EVENTS_AFTER = "SELECT seq, user_id, kind, at FROM account_events WHERE seq > ? ORDER BY seq"
_EVENT_BOUNDS = "SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) FROM account_events"
_LAST_SEQ = "SELECT seq FROM sqlite_sequence WHERE name = 'account_events'"
_PRUNE_EVENTS = "DELETE FROM account_events WHERE at <= ?"


class AccountsStore:
    """The SQL of ``accounts.sqlite`` over one scope (see the module docstring)."""

    migrations: Sequence[Callable[[Any], None]] = MIGRATIONS

    def __init__(self, db: Scope) -> None:
        self.db = db
        db.migrate(COMPONENT, self.migrations)

    # ── users ───────────────────────────────────────────────────────

    def insert_user(
        self, user_id: str, username: str, role: str, password_hash: str | None, now_ms: int
    ) -> User:
        changed_at = now_ms if password_hash is not None else None
        try:
            self._insert_user_row(
                (user_id, username, role, password_hash, now_ms, now_ms, changed_at)
            )
        except IntegrityError as exc:
            if self.user_by_username(username) is not None:
                raise UsernameTakenError(username) from exc
            raise  # an id collision: 30 random bits per slug; the caller mints anew
        user = self.user_by_id(user_id)
        assert user is not None
        return user

    def _insert_user_row(self, values: tuple[Any, ...]) -> None:
        self.db.execute(_INSERT_USER, values)

    def user_by_id(self, user_id: str) -> User | None:
        return _user(self.db.query_one(_USER_BY_ID, (user_id,)))

    def user_by_username(self, username: str) -> User | None:
        return _user(self.db.query_one(_USER_BY_USERNAME, (username,)))

    def password_hash(self, username: str) -> tuple[User, str | None] | None:
        row = self.db.query_one(_USER_BY_USERNAME, (username,))
        return None if row is None else (_to_user(row), row["password_hash"])

    def password_hash_by_id(self, user_id: str) -> str | None:
        row = self.db.query_one(_USER_BY_ID, (user_id,))
        return None if row is None else row["password_hash"]

    def list_users(self) -> list[User]:
        return [_to_user(row) for row in self.db.query(_LIST_USERS)]

    def count_users(self) -> int:
        return int(self.db.query(_COUNT_USERS)[0][0])

    def count_admins(self) -> int:
        """Admins ever made and still present, disabled or not."""
        return int(self.db.query(_COUNT_ADMINS)[0][0])

    def count_active_admins(self) -> int:
        return int(self.db.query(_COUNT_ACTIVE_ADMINS)[0][0])

    def set_password(self, user_id: str, password_hash: str, now_ms: int) -> None:
        self.db.write(_SET_PASSWORD, (password_hash, now_ms, now_ms, user_id))

    def rehash_password(self, user_id: str, password_hash: str) -> None:
        """Same password, stronger parameters: not a password change (sign-ins stay)."""
        self.db.write(_REHASH_PASSWORD, (password_hash, user_id))

    def set_role(self, user_id: str, role: str, now_ms: int) -> None:
        self.db.write(_SET_ROLE, (role, now_ms, user_id))

    def set_disabled(self, user_id: str, disabled_at: int | None, now_ms: int) -> None:
        self.db.write(_SET_DISABLED, (disabled_at, now_ms, user_id))

    # ── sign-ins ────────────────────────────────────────────────────

    def insert_sign_in(
        self, token_hash: str, user_id: str, now_ms: int, expires_at: int, address: str
    ) -> None:
        self.db.write(_INSERT_SIGN_IN, (token_hash, user_id, now_ms, expires_at, address))

    def sign_in_user(self, token_hash: str) -> tuple[User, int] | None:
        """The user of a sign-in and the sign-in's expiry, read in one statement."""
        row = self.db.query_one(_SIGN_IN_USER, (token_hash,))
        return None if row is None else (_to_user(row), int(row["sign_in_expires_at"]))

    def renew_sign_in(self, token_hash: str, expires_at: int) -> None:
        self.db.write(_RENEW_SIGN_IN, (expires_at, token_hash))

    def delete_sign_in(self, token_hash: str) -> str | None:
        """Delete one sign-in; return its user id (None if there was none)."""
        # fetchall: a RETURNING statement left unfinished would keep its transaction open.
        rows = self.db.execute(_DELETE_SIGN_IN, (token_hash,)).fetchall()
        return str(rows[0][0]) if rows else None

    def delete_user_sign_ins(self, user_id: str, keep_hash: str | None = None) -> int:
        return self.db.write(_DELETE_USER_SIGN_INS, (user_id, keep_hash))

    def delete_expired_sign_ins(self, now_ms: int) -> int:
        return self.db.write(_DELETE_EXPIRED_SIGN_INS, (now_ms,))

    def count_live_sign_ins(self, user_id: str, now_ms: int) -> int:
        return int(self.db.query(_COUNT_USER_SIGN_INS, (user_id, now_ms))[0][0])

    # ── invites ─────────────────────────────────────────────────────

    def insert_invite(
        self, invite_id: str, token_hash: str, created_by: str, now_ms: int, expires_at: int
    ) -> None:
        self.db.write(_INSERT_INVITE, (invite_id, token_hash, created_by, now_ms, expires_at))

    def claim_invite(self, token_hash: str, user_id: str, now_ms: int) -> bool:
        """Mark a live invite used by ``user_id``; False if it is not live (one statement)."""
        rows = self.db.execute(_CLAIM_INVITE, (now_ms, user_id, token_hash, now_ms)).fetchall()
        return bool(rows)

    def invite_is_live(self, token_hash: str, now_ms: int) -> bool:
        """Whether ``claim_invite`` would succeed now (a check before costly work; the claim
        itself stays the one that counts)."""
        return bool(self.db.query(_LIVE_INVITE, (token_hash, now_ms)))

    def list_invites(self) -> list[Invite]:
        return [
            Invite(
                id=row["id"],
                created_by=row["created_by"],
                created_at=row["created_at"],
                expires_at=row["expires_at"],
                used_at=row["used_at"],
                used_by=row["used_by"],
                revoked=row["revoked_at"] is not None,
            )
            for row in self.db.query(_LIST_INVITES)
        ]

    def revoke_invite(self, invite_id: str, now_ms: int) -> bool:
        return self.db.write(_REVOKE_INVITE, (now_ms, invite_id)) == 1

    # ── throttling ──────────────────────────────────────────────────

    def record_failure(self, scope: str, key: str, now_ms: int) -> int:
        """Record one failed (or not yet successful) attempt; return its row id."""
        # fetchall: a RETURNING statement left unfinished would keep its transaction open.
        return int(self.db.execute(_INSERT_FAILURE, (scope, key, now_ms)).fetchall()[0][0])

    def delete_failure(self, rowid: int) -> None:
        self.db.write(_DELETE_FAILURE, (rowid,))

    def failures_since(self, scope: str, key: str, since_ms: int) -> list[int]:
        return [int(row[0]) for row in self.db.query(_FAILURES_SINCE, (scope, key, since_ms))]

    def clear_failures(self, scope: str, key: str) -> None:
        self.db.write(_CLEAR_FAILURES, (scope, key))

    def prune_failures(self, before_ms: int) -> int:
        return self.db.write(_PRUNE_FAILURES, (before_ms,))

    # ── settings ────────────────────────────────────────────────────

    def setting(self, key: str) -> str | None:
        row = self.db.query_one(_GET_SETTING, (key,))
        return None if row is None else str(row[0])

    def put_setting(self, key: str, value: str) -> None:
        self.db.write(_PUT_SETTING, (key, value))

    def delete_setting(self, key: str) -> None:
        self.db.write(_DELETE_SETTING, (key,))

    # ── change feed ─────────────────────────────────────────────────

    def append_event(self, user_id: str, kind: str, now_ms: int) -> None:
        self.db.write(_APPEND_EVENT, (user_id, kind, now_ms))

    def events_after(self, seq: int) -> list[AccountChange]:
        return [
            AccountChange(seq=row["seq"], user_id=row["user_id"], kind=row["kind"], at=row["at"])
            for row in self.db.query(_EVENTS_AFTER, (seq,))
        ]

    def oldest_event_seq(self) -> int:
        return int(self.db.query(_EVENT_BOUNDS)[0][0])

    def last_event_seq(self) -> int:
        """The highest seq ever given out (also after pruning), 0 if none."""
        row = self.db.query_one(_LAST_SEQ)
        return 0 if row is None else int(row[0])

    def prune_events(self, before_ms: int) -> int:
        return self.db.write(_PRUNE_EVENTS, (before_ms,))


def _to_user(row: Row) -> User:
    return User(
        id=row["id"],
        username=row["username"],
        role=row["role"],
        disabled=row["disabled_at"] is not None,
        has_password=row["password_hash"] is not None,
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        password_changed_at=row["password_changed_at"],
    )


def _user(row: Row | None) -> User | None:
    return None if row is None else _to_user(row)
