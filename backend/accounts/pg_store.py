"""The accounts tables on PostgreSQL: the twin of :mod:`backend.accounts.store`.

Every statement that reads the same on both engines is inherited; this module holds the
schema and the few statements that differ:

* **Types and order.** ``bigint`` for the millisecond columns; text keys that lists are sorted
  by (usernames, invite ids) are ``COLLATE "C"``, byte order as SQLite's, whatever the
  database's own collation is.
* **Throttling rows** have an identity ``id`` (no ``rowid`` on PostgreSQL).
* **The change feed.** An identity column hands out numbers at insert, not at commit, so a
  reader past 7 could miss a 6 committed later, and a rolled-back insert would burn a number
  the gap rule then reads as lost events. ``account_event_counter`` (one row) gives the next
  number instead: the ``UPDATE`` takes its row lock until commit, so appends commit in number
  order, a rollback gives the number back, and ``last_event_seq`` is the counter (numbers only
  grow, also after pruning, as ``AUTOINCREMENT`` promises on SQLite).
* Each override says ``@override``: mypy fails if a rename in the base store leaves one
  overriding nothing (it would silently run the SQLite statement).
* **A username conflict** inside the caller's transaction is taken in a savepoint: on
  PostgreSQL an error ends the whole transaction, and the caller carries on after this one
  (it mints another id, or reports the name as taken).
"""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from backend.accounts.store import _INSERT_USER, AccountsStore
from backend.storage import Scope


def _m001_accounts(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE users (
            id text COLLATE "C" PRIMARY KEY,
            username text COLLATE "C" NOT NULL UNIQUE,
            role text NOT NULL CHECK (role IN ('admin', 'user')),
            password_hash text,
            disabled_at bigint,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            password_changed_at bigint
        )
        """
    )
    db.execute(
        """
        CREATE TABLE sessions (
            token_hash text PRIMARY KEY,
            user_id text NOT NULL,
            created_at bigint NOT NULL,
            expires_at bigint NOT NULL,
            address text NOT NULL DEFAULT ''
        )
        """
    )
    db.execute("CREATE INDEX sessions_by_user ON sessions (user_id)")
    db.execute("CREATE INDEX sessions_by_expiry ON sessions (expires_at)")
    db.execute(
        """
        CREATE TABLE invites (
            id text COLLATE "C" PRIMARY KEY,
            token_hash text NOT NULL UNIQUE,
            created_by text NOT NULL,
            created_at bigint NOT NULL,
            expires_at bigint NOT NULL,
            used_at bigint,
            used_by text,
            revoked_at bigint
        )
        """
    )
    db.execute(
        """
        CREATE TABLE failed_attempts (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            scope text NOT NULL,
            key text NOT NULL,
            at bigint
        )
        """
    )
    db.execute("CREATE INDEX failed_attempts_by_key ON failed_attempts (scope, key, at)")
    db.execute("CREATE INDEX failed_attempts_by_time ON failed_attempts (at)")
    db.execute("CREATE TABLE account_settings (key text PRIMARY KEY, value text NOT NULL)")
    db.execute(
        """
        CREATE TABLE account_events (
            seq bigint PRIMARY KEY,
            user_id text NOT NULL,
            kind text NOT NULL,
            at bigint NOT NULL
        )
        """
    )
    db.execute(
        "CREATE TABLE account_event_counter (one boolean PRIMARY KEY DEFAULT true "
        "CHECK (one), last bigint NOT NULL)"
    )
    db.execute("INSERT INTO account_event_counter (last) VALUES (0)")


MIGRATIONS = (_m001_accounts,)

_DELETE_USER_SIGN_INS = (
    "DELETE FROM sessions WHERE user_id = ? AND token_hash IS DISTINCT FROM ?::text"
)
_INSERT_FAILURE = "INSERT INTO failed_attempts (scope, key, at) VALUES (?, ?, ?) RETURNING id"
_DELETE_FAILURE = "DELETE FROM failed_attempts WHERE id = ?"
_APPEND_EVENT = """
WITH next AS (UPDATE account_event_counter SET last = last + 1 RETURNING last)
INSERT INTO account_events (seq, user_id, kind, at) SELECT last, ?, ?, ? FROM next
"""
_LAST_SEQ = "SELECT last FROM account_event_counter"


class PgAccountsStore(AccountsStore):
    """The accounts SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = MIGRATIONS

    @override
    def _insert_user_row(self, values: tuple[Any, ...]) -> None:
        with self.db.transaction():  # a savepoint when the caller has a transaction open
            self.db.execute(_INSERT_USER, values)

    @override
    def delete_user_sign_ins(self, user_id: str, keep_hash: str | None = None) -> int:
        return self.db.write(_DELETE_USER_SIGN_INS, (user_id, keep_hash))

    @override
    def record_failure(self, scope: str, key: str, now_ms: int) -> int:
        return int(self.db.execute(_INSERT_FAILURE, (scope, key, now_ms)).fetchall()[0][0])

    @override
    def delete_failure(self, rowid: int) -> None:
        self.db.write(_DELETE_FAILURE, (rowid,))

    @override
    def append_event(self, user_id: str, kind: str, now_ms: int) -> None:
        self.db.write(_APPEND_EVENT, (user_id, kind, now_ms))

    @override
    def last_event_seq(self) -> int:
        row = self.db.query_one(_LAST_SEQ)
        return 0 if row is None else int(row[0])
