"""The conversation store on PostgreSQL: the twin of :mod:`backend.sessions.store`.

Everything the store keeps and every rule of when it may trust it (tails, token memos,
``data_version``, the retired mark read after a foreign commit) is inherited; this module
names the twins of the stores it composes and the schema they run on:

* every statement runs through :class:`~backend.sessions.pg_scoped.ScopeKeyed`, which binds
  the conversation's scope first (one set of tables for every conversation);
* the retired mark is the ``retired_at`` of the conversation's ``session_scopes`` row
  (:mod:`backend.sessions.pg_schema`), registered when the store first opens the scope.
"""

from __future__ import annotations

from typing_extensions import override

from backend.sessions import pg_schema
from backend.sessions.pg_attachment_store import PgAttachmentStore
from backend.sessions.pg_compaction_store import PgCompactionStore
from backend.sessions.pg_paths import PgPathReader
from backend.sessions.pg_rows import PgRowReader
from backend.sessions.pg_scoped import ScopeKeyed
from backend.sessions.pg_search_index import PgSearchIndex
from backend.sessions.pg_writes import PgMessageWriter
from backend.sessions.store import SessionStore
from backend.storage import Scope


class PgSessionStore(SessionStore):
    """The storage engine under every ``Session`` handle of one conversation on PostgreSQL."""

    migrations = pg_schema.MIGRATIONS
    attachment_store = PgAttachmentStore
    compaction_store = PgCompactionStore
    row_reader = PgRowReader
    path_reader = PgPathReader
    search_index = PgSearchIndex
    message_writer = PgMessageWriter
    _SELECT_LEAF_SEQ = (
        "SELECT seq FROM session_messages WHERE scope = ? AND session_id = ? AND id = ?"
    )
    _SELECT_ANY_ROW = "SELECT 1 FROM session_messages WHERE scope = ? AND session_id = ? LIMIT 1"
    _SELECT_TAIL = (
        "SELECT id, seq FROM session_messages WHERE scope = ? AND session_id = ?"
        " ORDER BY seq DESC LIMIT 1"
    )

    @override
    def _statements(self, database: Scope) -> Scope:
        self._scope = pg_schema.postgres_scope(database)
        return ScopeKeyed(self._scope)

    @override
    def _open_retired(self, database: Scope) -> bool:
        return pg_schema.register(pg_schema.postgres_scope(database))

    @override
    def _is_retired(self) -> bool:
        return pg_schema.is_marked_retired(self._scope)

    @staticmethod
    @override
    def _location(database: Scope) -> str:
        return pg_schema.postgres_scope(database).name
