"""``sharing.sqlite``: the tables of the sharing service, and every SQL statement on them.

Tables (component ``sharing``)::

    share_chats(owner_id, chat_id, owner_context, deleted_at, created_at)   PK (owner, chat)
        one row per chat that was ever shared or linked: the owner's per-chat switch
        "runs here may see my memory and other chats" and whether the chat is deleted
        (soft: undo brings its members back)
    share_members(owner_id, chat_id, member_id, role, since, updated_at)  PK (owner, chat, member)
    share_events(seq PK AUTOINCREMENT, user_id, owner_id, chat_id, kind, role, at)  the feed
    share_links(id PK, token_hash UNIQUE, owner_id, chat_id, title, created_at,
                message_count, size_bytes, includes_attachments)
    share_link_messages(link_id, position, author, role, text, created_at)   the snapshot
    share_link_files(link_id, position, ordinal, name, media_type, data)     its files

Invariants: a link's token is stored only as its SHA-256; a revoked link leaves no row behind
(its snapshot is deleted with it: nothing is kept that nobody may read); ``share_events.seq``
only grows (``AUTOINCREMENT`` never reuses a pruned number). Every table is named
``share_*`` so no other package's SQL can collide with it (tests/sharing/test_tables.py).

Callers (:mod:`backend.sharing.service`) own transactions; this module never commits. Its
PostgreSQL twin, :mod:`backend.sharing.pg_store`, inherits every statement that reads the
same on both engines and overrides the few that do not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from backend.sharing.roles import MemberRole
from backend.sharing.values import (
    ShareLink,
    SharingChange,
    SharingChangeKind,
    SnapshotAttachment,
    SnapshotMessage,
)
from backend.storage import Row, Scope

COMPONENT = "sharing"


class ChatState(NamedTuple):
    """A ``share_chats`` row: the owner's switch, the soft delete, when it was first shared."""

    owner_context: bool
    deleted_at: int | None
    created_at: int


def _m001_sharing(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE share_chats (
            owner_id TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            owner_context INTEGER NOT NULL DEFAULT 0 CHECK (owner_context IN (0, 1)),
            deleted_at INTEGER,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (owner_id, chat_id)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE share_members (
            owner_id TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            member_id TEXT NOT NULL,
            role TEXT NOT NULL CHECK (role IN ('participant', 'viewer')),
            since INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (owner_id, chat_id, member_id)
        ) WITHOUT ROWID
        """
    )
    db.execute("CREATE INDEX share_members_by_member ON share_members (member_id)")
    db.execute(
        """
        CREATE TABLE share_events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            user_id TEXT NOT NULL,
            owner_id TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            role TEXT,
            at INTEGER NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX share_events_by_time ON share_events (at)")
    _create_link_tables(db, integer="INTEGER", blob="BLOB", without_rowid=" WITHOUT ROWID")


def _create_link_tables(db: Scope, *, integer: str, blob: str, without_rowid: str) -> None:
    """The link tables read the same on both engines but for type names (and SQLite's
    ``WITHOUT ROWID``), so both migrations make them here."""
    db.execute(
        f"""
        CREATE TABLE share_links (
            id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            owner_id TEXT NOT NULL,
            chat_id TEXT NOT NULL,
            title TEXT NOT NULL,
            created_at {integer} NOT NULL,
            message_count {integer} NOT NULL,
            size_bytes {integer} NOT NULL,
            includes_attachments {integer} NOT NULL CHECK (includes_attachments IN (0, 1))
        ){without_rowid}
        """
    )
    db.execute("CREATE INDEX share_links_by_owner ON share_links (owner_id, created_at)")
    db.execute(
        f"""
        CREATE TABLE share_link_messages (
            link_id TEXT NOT NULL,
            position {integer} NOT NULL,
            author TEXT NOT NULL,
            role TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at {integer} NOT NULL,
            PRIMARY KEY (link_id, position)
        ){without_rowid}
        """
    )
    db.execute(
        f"""
        CREATE TABLE share_link_files (
            link_id TEXT NOT NULL,
            position {integer} NOT NULL,
            ordinal {integer} NOT NULL,
            name TEXT NOT NULL,
            media_type TEXT NOT NULL,
            data {blob} NOT NULL,
            PRIMARY KEY (link_id, position, ordinal)
        ){without_rowid}
        """
    )


MIGRATIONS = (_m001_sharing,)

_CHAT_KEY = "owner_id = ? AND chat_id = ?"
_ENSURE_CHAT = (
    "INSERT INTO share_chats (owner_id, chat_id, owner_context, deleted_at, created_at) "
    "VALUES (?, ?, 0, NULL, ?) ON CONFLICT (owner_id, chat_id) DO NOTHING"
)
_CHAT_STATE = f"SELECT owner_context, deleted_at, created_at FROM share_chats WHERE {_CHAT_KEY}"
_SET_OWNER_CONTEXT = f"UPDATE share_chats SET owner_context = ? WHERE {_CHAT_KEY}"
_SET_DELETED = f"UPDATE share_chats SET deleted_at = ? WHERE {_CHAT_KEY}"
_DELETE_CHAT = f"DELETE FROM share_chats WHERE {_CHAT_KEY}"
_CHATS_OF_OWNER = "SELECT chat_id FROM share_chats WHERE owner_id = ? ORDER BY chat_id"

_LIVE_ROLE = (
    "SELECT m.role FROM share_members AS m JOIN share_chats AS c "
    "ON c.owner_id = m.owner_id AND c.chat_id = m.chat_id "
    "WHERE m.owner_id = ? AND m.chat_id = ? AND m.member_id = ? AND c.deleted_at IS NULL"
)
_MEMBER_ROLE = f"SELECT role FROM share_members WHERE {_CHAT_KEY} AND member_id = ?"
_INSERT_MEMBER = (
    "INSERT INTO share_members (owner_id, chat_id, member_id, role, since, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_SET_MEMBER_ROLE = (
    f"UPDATE share_members SET role = ?, updated_at = ? WHERE {_CHAT_KEY} AND member_id = ?"
)
_DELETE_MEMBER = f"DELETE FROM share_members WHERE {_CHAT_KEY} AND member_id = ?"
_MEMBERS_OF = (
    f"SELECT member_id, role, since FROM share_members WHERE {_CHAT_KEY} ORDER BY since, member_id"
)
_DELETE_MEMBERS_OF = f"DELETE FROM share_members WHERE {_CHAT_KEY}"
_SHARED_WITH = (
    "SELECT m.owner_id, m.chat_id, m.role, m.since FROM share_members AS m "
    "JOIN share_chats AS c ON c.owner_id = m.owner_id AND c.chat_id = m.chat_id "
    "WHERE m.member_id = ? AND c.deleted_at IS NULL "
    "ORDER BY m.since DESC, m.owner_id, m.chat_id"
)
_MEMBERSHIPS_OF = (
    "SELECT owner_id, chat_id FROM share_members WHERE member_id = ? ORDER BY owner_id, chat_id"
)
_DELETE_MEMBERSHIPS_OF = "DELETE FROM share_members WHERE member_id = ?"

_LINK_COLUMNS = "id, chat_id, title, created_at, message_count, size_bytes, includes_attachments"
_INSERT_LINK = (
    "INSERT INTO share_links (id, token_hash, owner_id, chat_id, title, created_at, "
    "message_count, size_bytes, includes_attachments) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_LINK_MESSAGE = (
    "INSERT INTO share_link_messages (link_id, position, author, role, text, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_INSERT_LINK_FILE = (
    "INSERT INTO share_link_files (link_id, position, ordinal, name, media_type, data) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_LINKS_OF_OWNER = (
    f"SELECT {_LINK_COLUMNS} FROM share_links WHERE owner_id = ? ORDER BY created_at DESC, id"
)
_LINK_OWNED = f"SELECT {_LINK_COLUMNS} FROM share_links WHERE id = ? AND owner_id = ?"
_LIVE_LINK_BY_TOKEN = (
    "SELECT l.id, l.title, l.created_at FROM share_links AS l JOIN share_chats AS c "
    "ON c.owner_id = l.owner_id AND c.chat_id = l.chat_id "
    "WHERE l.token_hash = ? AND c.deleted_at IS NULL"
)
_LINK_MESSAGES = (
    "SELECT position, author, role, text, created_at FROM share_link_messages "
    "WHERE link_id = ? ORDER BY position"
)
_LINK_FILES = (
    "SELECT position, name, media_type, data FROM share_link_files "
    "WHERE link_id = ? ORDER BY position, ordinal"
)
_LINK_IDS_OF_CHAT = f"SELECT id FROM share_links WHERE {_CHAT_KEY}"
_LINK_IDS_OF_OWNER = "SELECT id FROM share_links WHERE owner_id = ?"
_DELETE_LINK = (
    "DELETE FROM share_link_files WHERE link_id = ?",
    "DELETE FROM share_link_messages WHERE link_id = ?",
    "DELETE FROM share_links WHERE id = ?",
)

_APPEND_EVENT = (
    "INSERT INTO share_events (user_id, owner_id, chat_id, kind, role, at) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_EVENTS_AFTER = (
    "SELECT seq, user_id, owner_id, chat_id, kind, role, at FROM share_events "
    "WHERE seq > ? ORDER BY seq"
)
_LAST_SEQ = "SELECT seq FROM sqlite_sequence WHERE name = 'share_events'"
_PRUNE_EVENTS = "DELETE FROM share_events WHERE at <= ?"


class SharingStore:
    """The SQL of ``sharing.sqlite`` over one scope (see the module docstring)."""

    migrations: Sequence[Callable[[Any], None]] = MIGRATIONS

    def __init__(self, db: Scope) -> None:
        self.db = db
        db.migrate(COMPONENT, self.migrations)

    # ── chats ───────────────────────────────────────────────────────

    def ensure_chat(self, owner_id: str, chat_id: str, now_ms: int) -> None:
        self.db.write(_ENSURE_CHAT, (owner_id, chat_id, now_ms))

    def chat_state(self, owner_id: str, chat_id: str) -> ChatState | None:
        """The row of a chat that was ever shared or linked, else None."""
        row = self.db.query_one(_CHAT_STATE, (owner_id, chat_id))
        if row is None:
            return None
        return ChatState(bool(row["owner_context"]), row["deleted_at"], int(row["created_at"]))

    def set_owner_context(self, owner_id: str, chat_id: str, enabled: bool) -> None:
        self.db.write(_SET_OWNER_CONTEXT, (int(enabled), owner_id, chat_id))

    def set_deleted(self, owner_id: str, chat_id: str, deleted_at: int | None) -> None:
        self.db.write(_SET_DELETED, (deleted_at, owner_id, chat_id))

    def delete_chat(self, owner_id: str, chat_id: str) -> None:
        self.db.write(_DELETE_CHAT, (owner_id, chat_id))

    def chats_of_owner(self, owner_id: str) -> list[str]:
        return [row[0] for row in self.db.query(_CHATS_OF_OWNER, (owner_id,))]

    # ── members ─────────────────────────────────────────────────────

    def live_role(self, owner_id: str, chat_id: str, member_id: str) -> MemberRole | None:
        """The member's role in a chat that is not deleted; one indexed read."""
        row = self.db.query_one(_LIVE_ROLE, (owner_id, chat_id, member_id))
        return None if row is None else row[0]

    def member_role(self, owner_id: str, chat_id: str, member_id: str) -> MemberRole | None:
        row = self.db.query_one(_MEMBER_ROLE, (owner_id, chat_id, member_id))
        return None if row is None else row[0]

    def insert_member(
        self, owner_id: str, chat_id: str, member_id: str, role: MemberRole, now_ms: int
    ) -> None:
        self.db.write(_INSERT_MEMBER, (owner_id, chat_id, member_id, role, now_ms, now_ms))

    def set_member_role(
        self, owner_id: str, chat_id: str, member_id: str, role: MemberRole, now_ms: int
    ) -> None:
        self.db.write(_SET_MEMBER_ROLE, (role, now_ms, owner_id, chat_id, member_id))

    def delete_member(self, owner_id: str, chat_id: str, member_id: str) -> None:
        self.db.write(_DELETE_MEMBER, (owner_id, chat_id, member_id))

    def members_of(self, owner_id: str, chat_id: str) -> list[tuple[str, MemberRole, int]]:
        """(member id, role, since) by since: the order people were added in."""
        rows = self.db.query(_MEMBERS_OF, (owner_id, chat_id))
        return [(row["member_id"], row["role"], int(row["since"])) for row in rows]

    def delete_members_of(self, owner_id: str, chat_id: str) -> None:
        self.db.write(_DELETE_MEMBERS_OF, (owner_id, chat_id))

    def shared_with(self, member_id: str) -> list[tuple[str, str, MemberRole, int]]:
        """(owner id, chat id, role, since) of the live chats shared with ``member_id``."""
        rows = self.db.query(_SHARED_WITH, (member_id,))
        return [(r["owner_id"], r["chat_id"], r["role"], int(r["since"])) for r in rows]

    def memberships_of(self, member_id: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.db.query(_MEMBERSHIPS_OF, (member_id,))]

    def delete_memberships_of(self, member_id: str) -> None:
        self.db.write(_DELETE_MEMBERSHIPS_OF, (member_id,))

    # ── links ───────────────────────────────────────────────────────

    def insert_link(
        self,
        link: ShareLink,
        token_hash: str,
        owner_id: str,
        messages: Sequence[SnapshotMessage],
    ) -> None:
        self.db.write(
            _INSERT_LINK,
            (
                link.id,
                token_hash,
                owner_id,
                link.chat_id,
                link.title,
                link.created_at,
                link.message_count,
                link.size_bytes,
                int(link.includes_attachments),
            ),
        )
        texts = [
            (link.id, position, m.author, m.role, m.text, m.created_at)
            for position, m in enumerate(messages)
        ]
        files = [
            (link.id, position, ordinal, a.name, a.media_type, a.data)
            for position, m in enumerate(messages)
            for ordinal, a in enumerate(m.attachments)
        ]
        self.db.executemany(_INSERT_LINK_MESSAGE, texts)
        if files:
            self.db.executemany(_INSERT_LINK_FILE, files)

    def links_of_owner(self, owner_id: str) -> list[ShareLink]:
        return [_to_link(row) for row in self.db.query(_LINKS_OF_OWNER, (owner_id,))]

    def link_owned(self, link_id: str, owner_id: str) -> ShareLink | None:
        row = self.db.query_one(_LINK_OWNED, (link_id, owner_id))
        return None if row is None else _to_link(row)

    def live_link(self, token_hash: str) -> tuple[str, str, int] | None:
        """(link id, title, created_at) of the link with this token hash, if it can be
        shown now (not revoked, its chat not deleted)."""
        row = self.db.query_one(_LIVE_LINK_BY_TOKEN, (token_hash,))
        return None if row is None else (row["id"], row["title"], int(row["created_at"]))

    def link_messages(self, link_id: str) -> list[SnapshotMessage]:
        files: dict[int, list[SnapshotAttachment]] = {}
        for row in self.db.query(_LINK_FILES, (link_id,)):
            files.setdefault(int(row["position"]), []).append(
                SnapshotAttachment(
                    name=row["name"], media_type=row["media_type"], data=bytes(row["data"])
                )
            )
        return [
            SnapshotMessage(
                author=row["author"],
                role=row["role"],
                text=row["text"],
                created_at=int(row["created_at"]),
                attachments=tuple(files.get(int(row["position"]), ())),
            )
            for row in self.db.query(_LINK_MESSAGES, (link_id,))
        ]

    def link_ids_of_chat(self, owner_id: str, chat_id: str) -> list[str]:
        return [row[0] for row in self.db.query(_LINK_IDS_OF_CHAT, (owner_id, chat_id))]

    def link_ids_of_owner(self, owner_id: str) -> list[str]:
        return [row[0] for row in self.db.query(_LINK_IDS_OF_OWNER, (owner_id,))]

    def delete_link(self, link_id: str) -> None:
        for statement in _DELETE_LINK:
            self.db.write(statement, (link_id,))

    # ── change feed ─────────────────────────────────────────────────

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

    def events_after(self, seq: int) -> list[SharingChange]:
        return [
            SharingChange(
                seq=row["seq"],
                user_id=row["user_id"],
                owner_id=row["owner_id"],
                chat_id=row["chat_id"],
                kind=row["kind"],
                role=row["role"],
                at=row["at"],
            )
            for row in self.db.query(_EVENTS_AFTER, (seq,))
        ]

    def last_event_seq(self) -> int:
        """The highest seq ever given out (also after pruning), 0 if none."""
        row = self.db.query_one(_LAST_SEQ)
        return 0 if row is None else int(row[0])

    def prune_events(self, before_ms: int) -> int:
        return self.db.write(_PRUNE_EVENTS, (before_ms,))


def _to_link(row: Row) -> ShareLink:
    return ShareLink(
        id=row["id"],
        chat_id=row["chat_id"],
        title=row["title"],
        created_at=int(row["created_at"]),
        message_count=int(row["message_count"]),
        size_bytes=int(row["size_bytes"]),
        includes_attachments=bool(row["includes_attachments"]),
    )
