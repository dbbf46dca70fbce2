"""SearchIndex: the conversation file's full-text index, built on first search, then kept current.

Owns ``session_fts`` (FTS5, one document per searchable message, keyed by
``fts_rowid(session_id, id)``); what text a message contributes and how a query is quoted are
the pure rules of :mod:`backend.sessions.search`.

Invariants:

* **Lazy.** A file nobody searched has no FTS table, and appends pay nothing for search. The
  first search creates the table and backfills every stored message of every session in one
  transaction (chunked rows reassembled, unlike the reference's SQL-only backfill); from then
  on every write updates its documents in the same transaction as its rows.
* **One rule of what is findable.** A row is found when it exists, is not a hidden overlay
  echo, and has non-empty indexed text. :meth:`SearchIndex.searchable_texts` applies the same
  rule without the index, for indexes kept outside the file (``SearchableDocuments``).
* Whether the table exists is cached (``exists``). Another connection may create it at any
  time, and a caller's savepoint rollback may take away the one this connection created, so
  the store re-checks it after a foreign commit (:meth:`rediscover`) and after a caller's
  transaction (:meth:`reverify`) until its creation has committed.

Callers own the transaction and hold ``database.lock``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from backend.sessions.compaction_store import CompactionStore
from backend.sessions.encoding import decode_content
from backend.sessions.overlays import COMPACTION_PREFIX
from backend.sessions.records import SearchResult
from backend.sessions.rows import RowReader
from backend.sessions.search import FTS_TOKENIZER, fts_rowid, indexed_text
from backend.storage import Row, Scope

_FTS_BACKFILL_BATCH_ROWS = 500
Document = tuple[int, str, str, str, str]
"""``(rowid, message id, session id, role, indexed text)``: one message's search document."""
_FTS_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_fts'"


class SearchIndex:
    """SQL of ``session_fts`` for one conversation file."""

    def __init__(self, database: Scope, rows: RowReader, compactions: CompactionStore) -> None:
        self.db = database
        self._rows = rows
        self._compactions = compactions
        self.exists = self._table_exists()
        """Whether the FTS table exists: writes maintain documents only then."""
        self._unconfirmed = False

    def _table_exists(self) -> bool:
        return self.db.query_one(_FTS_EXISTS) is not None

    def rediscover(self) -> None:
        """After another connection committed: it may have built the index."""
        if not self.exists:
            self.exists = self._table_exists()

    def reverify(self) -> None:
        """Before reusing state inside a caller's transaction: a savepoint may have undone it."""
        if self._unconfirmed:
            self.exists = self._table_exists()

    _CREATE_FTS = (
        "CREATE VIRTUAL TABLE IF NOT EXISTS session_fts USING fts5("
        "id UNINDEXED, session_id UNINDEXED, role UNINDEXED, content,"
        f" tokenize = '{FTS_TOKENIZER}')"
    )
    _SELECT_ALL_FOR_INDEX = (
        "SELECT session_id, id, role, content, content_chunks FROM session_messages"
    )
    _INDEX = "INSERT INTO session_fts (rowid, id, session_id, role, content) VALUES (?, ?, ?, ?, ?)"
    _UNINDEX = "DELETE FROM session_fts WHERE rowid = ?"
    _SELECT_INDEXED = "SELECT role, content FROM session_fts WHERE rowid = ?"
    _CLEAR_INDEX = "DELETE FROM session_fts WHERE session_id = ?"

    def ensure(self) -> None:
        """Create the FTS table and index every stored message (all sessions), once."""
        if self.exists:
            return
        if not self._table_exists():  # another process may have built it
            self._create()
            self._backfill()
        self.exists = True
        # Until the commit, a caller's savepoint rollback could still take the table away.
        self._unconfirmed = True
        self.db.after_commit(self._confirm)
        self.db.on_rollback(self._forget)

    def _confirm(self) -> None:
        self._unconfirmed = False

    def _forget(self) -> None:
        self.exists = False
        self._unconfirmed = False

    def _create(self) -> None:
        self.db.execute(self._CREATE_FTS)

    def _backfill(self) -> None:
        batch: list[Document] = []
        for document in self._stored_documents():
            batch.append(document)
            if len(batch) >= _FTS_BACKFILL_BATCH_ROWS:
                self._write_documents(batch)
                batch = []
        if batch:
            self._write_documents(batch)

    def _stored_rows(self) -> Iterator[Row]:
        """Every stored message row (``session_id, id, role, content, content_chunks``)."""
        return self.db.iterate(self._SELECT_ALL_FOR_INDEX)

    def _stored_documents(self) -> Iterator[Document]:
        """The document of every stored message with indexed text, all sessions."""
        for row in self._stored_rows():
            content = row["content"]
            if row["content_chunks"]:
                continuations = self._rows.continuations(row["session_id"], [row["id"]])
                content += "".join(continuations.get(row["id"], ()))
            message = decode_content(content)
            text = indexed_text(message) if message is not None else ""
            if text:
                rowid = fts_rowid(row["session_id"], row["id"])
                yield (rowid, row["id"], row["session_id"], row["role"], text)

    def _write_documents(self, documents: Sequence[Document]) -> None:
        self.db.executemany(self._INDEX, documents)

    def index(self, session_id: str, message_id: str, role: str, text: str) -> None:
        """Add a new row's document (nothing for a row without indexed text)."""
        if text:
            self.db.write(
                self._INDEX, (fts_rowid(session_id, message_id), message_id, session_id, role, text)
            )

    def reindex(self, session_id: str, message_id: str, role: str, text: str) -> None:
        """Make an updated row's document match it; an unchanged document is not rewritten."""
        rowid = fts_rowid(session_id, message_id)
        existing = self.db.query_one(self._SELECT_INDEXED, (rowid,))
        if existing is not None:
            if existing["content"] == text and existing["role"] == role:
                return
            self.db.execute(self._UNINDEX, (rowid,))
        self.index(session_id, message_id, role, text)

    def unindex(self, session_id: str, message_ids: Iterable[str]) -> None:
        self.db.executemany(
            self._UNINDEX, ((fts_rowid(session_id, message_id),) for message_id in message_ids)
        )

    def clear(self, session_id: str) -> None:
        self.db.execute(self._CLEAR_INDEX, (session_id,))

    _SEARCH = """
        SELECT f.id, f.role, f.content, f.rank
        FROM session_fts AS f
        WHERE session_fts MATCH :query AND f.session_id = :sid
          AND f.id NOT IN (
            SELECT :prefix || c.id FROM session_compactions AS c WHERE c.session_id = :sid
          )
          AND EXISTS (
            SELECT 1 FROM session_messages AS m WHERE m.session_id = :sid AND m.id = f.id
          )
        ORDER BY f.rank
        LIMIT :limit
    """

    def search(self, session_id: str, match: str, limit: int) -> list[SearchResult]:
        """Rows of the session matching ``match`` (a built FTS5 query), best bm25 rank first."""
        rows = self.db.query(
            self._SEARCH,
            {
                "query": match,
                "sid": session_id,
                "prefix": COMPACTION_PREFIX,
                "limit": limit,
            },
        )
        return [
            SearchResult(row["id"], row["role"], row["content"], float(row["rank"])) for row in rows
        ]

    def searchable_texts(
        self, session_id: str, message_ids: Sequence[str] | None
    ) -> dict[str, str]:
        """``{id: text}`` of the rows ``search`` can find among ``message_ids`` (all if None).

        The rule of the FTS index, read from the rows (the index need not exist). Attachments
        are not resolved (they are never indexed).
        """
        hidden = self._compactions.hidden_ids(session_id)
        found: dict[str, str] = {}
        for message_id, content in self._rows.load_contents(session_id, message_ids).items():
            if message_id in hidden:
                continue
            message = decode_content(content)
            text = indexed_text(message) if message is not None else ""
            if text:
                found[message_id] = text
        return found
