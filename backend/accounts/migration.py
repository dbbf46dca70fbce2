"""The accounts tables for ``chats migrate``: copied row for row between engines.

Password hashes are copied as they are (argon2id strings read the same on both engines), so
every person signs in with the same password; sign-ins (hashed tokens), invites, throttle
counters, settings and the account feed come along. A failed attempt's own number is
PostgreSQL's alone (SQLite keeps the row's rowid): the attempts are copied in time order.
"""

from __future__ import annotations

from backend.accounts.core import SCOPE
from backend.accounts.pg_store import PgAccountsStore
from backend.accounts.store import AccountsStore
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, copy_scope, table_exists

__all__ = ["REBUILT", "SCOPE", "TABLES", "copy_accounts", "holds_accounts"]

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        "users",
        (
            "id",
            "username",
            "role",
            "password_hash",
            "disabled_at",
            "created_at",
            "updated_at",
            "password_changed_at",
        ),
        ("id",),
        per_scope=False,
    ),
    CopiedTable(
        "sessions",
        ("token_hash", "user_id", "created_at", "expires_at", "address"),
        ("token_hash",),
        per_scope=False,
    ),
    CopiedTable(
        "invites",
        (
            "id",
            "token_hash",
            "created_by",
            "created_at",
            "expires_at",
            "used_at",
            "used_by",
            "revoked_at",
        ),
        ("id",),
        per_scope=False,
    ),
    CopiedTable("failed_attempts", ("scope", "key", "at"), ("at", "scope", "key"), per_scope=False),
    CopiedTable("account_settings", ("key", "value"), ("key",), per_scope=False),
    CopiedTable("account_events", ("seq", "user_id", "kind", "at"), ("seq",), per_scope=False),
)

REBUILT = ("account_event_counter",)
"""PostgreSQL numbers the feed from a one-row counter (backend/accounts/pg_store.py): set to
continue after the last copied entry, never copied."""
_COUNTER = (
    "UPDATE account_event_counter SET last = (SELECT coalesce(max(seq), 0) FROM account_events)"
)


def _prepare(target: Scope) -> object:
    store = PgAccountsStore if target.engine_kind == "postgresql" else AccountsStore
    return store(target)


def copy_accounts(source: Scope, target: Scope) -> Copied:
    """Every accounts row of ``source`` into ``target`` (one transaction on ``target``)."""
    after = (_COUNTER,) if target.engine_kind == "postgresql" else ()
    return copy_scope(source, target, TABLES, prepare=_prepare, after=after)


def holds_accounts(scope: Scope) -> bool:
    """Whether ``scope`` holds any account (a target must not)."""
    return (
        table_exists(scope, "users") and scope.query_one("SELECT 1 FROM users LIMIT 1") is not None
    )
