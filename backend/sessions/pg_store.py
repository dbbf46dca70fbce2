"""The conversation store on PostgreSQL: the twin of :mod:`backend.sessions.store`.

Everything the store keeps and every rule of when it may trust it (tails, token memos,
``data_version``, the retired mark read after a foreign commit) is inherited; this module
names the twins of the stores it composes and the schema they run on:

* every statement runs through :class:`~backend.sessions.pg_scoped.ScopeKeyed`, which binds
  the conversation's scope first (one set of tables for every conversation);
* the retired mark is the ``retired_at`` of the conversation's ``session_scopes`` row
  (:mod:`backend.sessions.pg_schema`), registered when the store first opens the scope;
* **an append is one round trip**: ``begin_append`` reads nothing, and ``insert`` hands the
  version it trusts to :meth:`PgMessageWriter.insert_at_once`, which writes (and commits) only
  while nobody else committed since; when someone did, nothing was written, and the insert
  takes the usual way: ``begin_write`` reads the version and catches up (dropping the tails,
  the retired mark read again), then the insert runs in the still-open transaction. So the
  tail an append writes is exactly the one ``begin_write`` would have let it use.
"""

from __future__ import annotations

from typing_extensions import override

from backend.sessions import pg_schema
from backend.sessions.encoding import EncodedMessage
from backend.sessions.pg_attachment_store import PgAttachmentStore
from backend.sessions.pg_compaction_store import PgCompactionStore
from backend.sessions.pg_paths import PgPathReader
from backend.sessions.pg_rows import PgRowReader
from backend.sessions.pg_scoped import ScopeKeyed
from backend.sessions.pg_search_index import PgSearchIndex
from backend.sessions.pg_writes import PgMessageWriter
from backend.sessions.records import OMITTED, _Omitted
from backend.sessions.store import NOT_INSERTED, SessionStore, _NotInserted
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

    folds_append_check = True
    _folded_check = False
    """``begin_append`` left the check for foreign commits to the ``insert`` that follows."""

    @override
    def begin_write(self, session_id: str, nested: bool) -> None:
        self._folded_check = False
        super().begin_write(session_id, nested)

    @override
    def begin_append(self, session_id: str, nested: bool) -> None:
        """Read nothing when the append can be one round trip (the transaction is the
        handle's own, nothing sent yet, and the session's tail is known)."""
        db = self.db
        assert isinstance(db, ScopeKeyed)
        if nested or self.retired or session_id not in self._tails or not db.nothing_sent:
            self.begin_write(session_id, nested)
        else:
            self._folded_check = True

    @override
    def insert(
        self,
        session_id: str,
        encoded: EncodedMessage,
        parent_id: str | _Omitted | None,
        created_at: int,
        *,
        keep_memo: bool = True,
    ) -> str | _NotInserted | None:
        if self._folded_check:  # an append (begin_append): parent OMITTED, keep_memo True
            self._folded_check = False
            writer = self._writer
            assert isinstance(writer, PgMessageWriter)
            if parent_id is OMITTED and not encoded.payloads and not encoded.references:
                tail = self._tails[session_id]
                stored = writer.insert_at_once(
                    session_id, encoded, tail.next_seq, tail.leaf_id, created_at, self._data_version
                )
                if stored is not None:
                    if not stored:
                        return NOT_INSERTED
                    parent, tail.leaf_id = tail.leaf_id, encoded.id
                    tail.next_seq += 1
                    if session_id in self._memos:  # as the file's insert keeps it
                        self._memo_after_insert(
                            session_id, encoded.id, parent, encoded.token_estimate
                        )
                    return parent
            super().begin_write(session_id, nested=False)  # the check, the usual way
        return super().insert(session_id, encoded, parent_id, created_at, keep_memo=keep_memo)

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
