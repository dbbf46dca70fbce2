"""The sharing tables on PostgreSQL: the twin of :mod:`backend.sharing.store`.

Every statement that reads the same on both engines is inherited; this module holds the
schema and the statements that differ:

* **Types and order.** ``bigint`` for millisecond columns and counts, ``bytea`` for files;
  the ids lists are sorted by are ``COLLATE "C"`` (byte order, as SQLite's), whatever the
  database's own collation is.
* **The change feed** takes its numbers from ``share_event_counter`` (one row), for the
  reason :mod:`backend.accounts.pg_store` gives: an identity column hands numbers out at
  insert, not at commit, so a reader past 7 could miss a 6 committed later. The counter's row
  lock orders appends by commit, a rollback gives its number back, and numbers only grow.
* Sharing is one scope for the whole server (like accounts), so its tables carry no
  ``scope`` column (pg-decisions 2 is about per-person and per-chat tables).
"""

from __future__ import annotations

from typing_extensions import override

from backend.sharing.roles import MemberRole
from backend.sharing.store import SharingStore, _create_link_tables
from backend.sharing.values import SharingChangeKind
from backend.storage import Scope

_ID = 'text COLLATE "C" NOT NULL'


def _m001_sharing(db: Scope) -> None:
    db.execute(
        f"""
        CREATE TABLE share_chats (
            owner_id {_ID},
            chat_id {_ID},
            owner_context integer NOT NULL DEFAULT 0 CHECK (owner_context IN (0, 1)),
            deleted_at bigint,
            created_at bigint NOT NULL,
            PRIMARY KEY (owner_id, chat_id)
        )
        """
    )
    db.execute(
        f"""
        CREATE TABLE share_members (
            owner_id {_ID},
            chat_id {_ID},
            member_id {_ID},
            role text NOT NULL CHECK (role IN ('participant', 'viewer')),
            since bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (owner_id, chat_id, member_id)
        )
        """
    )
    db.execute("CREATE INDEX share_members_by_member ON share_members (member_id)")
    db.execute(
        f"""
        CREATE TABLE share_events (
            seq bigint PRIMARY KEY,
            user_id text NOT NULL,
            owner_id {_ID},
            chat_id {_ID},
            kind text NOT NULL,
            role text,
            at bigint NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX share_events_by_time ON share_events (at)")
    db.execute(
        "CREATE TABLE share_event_counter (one boolean PRIMARY KEY DEFAULT true "
        "CHECK (one), last bigint NOT NULL)"
    )
    db.execute("INSERT INTO share_event_counter (last) VALUES (0)")
    _create_link_tables(db, integer="bigint", blob="bytea", without_rowid="")


MIGRATIONS = (_m001_sharing,)

_APPEND_EVENT = """
WITH next AS (UPDATE share_event_counter SET last = last + 1 RETURNING last)
INSERT INTO share_events (seq, user_id, owner_id, chat_id, kind, role, at)
SELECT last, ?, ?, ?, ?, ?, ? FROM next
"""
_LAST_SEQ = "SELECT last FROM share_event_counter"


class PgSharingStore(SharingStore):
    """The sharing SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = MIGRATIONS

    @override
    def append_event(
        self,
        user_id: str,
        owner_id: str,
        chat_id: str,
        kind: SharingChangeKind,
        role: MemberRole | None,
        now_ms: int,
    ) -> None:
        self.db.write(_APPEND_EVENT, (user_id, owner_id, chat_id, kind, role, now_ms))

    @override
    def last_event_seq(self) -> int:
        row = self.db.query_one(_LAST_SEQ)
        return 0 if row is None else int(row[0])
