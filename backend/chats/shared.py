"""Shared memory: context blocks and searchable entries every chat of a directory can reach.

Tables (component ``chats.shared``)::

    shared_context(label PK, content, updated_at)          WITHOUT ROWID
    shared_entries(label, key, doc, updated_at, PK(label, key))   WITHOUT ROWID
    shared_entries_fts  fts5(content, label UNINDEXED)      rowid = shared_entries.doc

Invariants:

* ``append`` is **one statement** (``INSERT ... ON CONFLICT DO UPDATE SET content = content ||
  excluded.content RETURNING content``), never a read followed by a write, so concurrent
  appends from any number of threads or processes all land (RFC edge case 6). ``set`` is
  last-writer-wins by design; callers adding facts should append.
* A block (``set``/``append``) and a label's indexed entries (``index``) are separate
  stores: ``get`` returns the block, ``search`` searches the entries. That is the split
  between ``RemoteContextProvider`` and ``RemoteSearchProvider``.
* Searching treats the query as terms (words, or quoted phrases), any of which may match:
  entries holding the exact phrase come first, then those holding every term in any order,
  then the rest, each tier by bm25 (``backend.sessions.search_terms.recall_tiers``). Results
  are the best :data:`SEARCH_LIMIT` distinct contents joined by a blank line, or ``None``
  when nothing matches, so a provider can hand the text straight to a prompt.

Labels and keys are free text (not paths); they must be non-blank strings. Shared memory is
stringly typed by design (RFC edge case 22). Labels, keys and contents follow the storage text
rule (``backend.storage.text``: a lone UTF-16 surrogate is stored as U+FFFD), applied by the
checks below so events carry what is stored. An append is normalised on its own: a pair split
across two appends is stored as two U+FFFD.

The PostgreSQL twin (:mod:`backend.chats.pg_shared`) keeps these methods and rewrites the
statements (class attributes) to take the directory's scope first (``_key``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backend.errors import InvalidInputError
from backend.sessions.search import FTS_TOKENIZER
from backend.sessions.search_terms import exact_first, recall_tiers
from backend.storage import Database, Scope, well_formed_text

COMPONENT = "chats.shared"
MEMORY_LABEL = "user_memory"
"""The person's memory: the block the memory panel edits and the default agent reads."""
SEARCH_LIMIT = 5
SEARCH_SEPARATOR = "\n\n"
MAX_LABEL_CHARS = 200


def _m001_shared(db: Database) -> None:
    db.execute(
        "CREATE TABLE shared_context (label TEXT PRIMARY KEY, content TEXT NOT NULL, "
        "updated_at INTEGER NOT NULL) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE shared_entries (label TEXT NOT NULL, key TEXT NOT NULL, "
        "doc INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (label, key)) "
        "WITHOUT ROWID"
    )
    db.execute(
        "CREATE VIRTUAL TABLE shared_entries_fts USING fts5("
        f"content, label UNINDEXED, tokenize = '{FTS_TOKENIZER}')"
    )


MIGRATIONS = (_m001_shared,)


def check_label(label: object, what: str = "shared context label") -> str:
    if not isinstance(label, str):
        raise TypeError(f"{what} must be a string, not {type(label).__name__}")
    if not label.strip():
        raise InvalidInputError(f"{what} must not be blank")
    if len(label) > MAX_LABEL_CHARS:
        raise InvalidInputError(f"{what} is longer than {MAX_LABEL_CHARS} characters")
    return well_formed_text(label)


def check_content(content: object, what: str = "shared context") -> str:
    if not isinstance(content, str):
        raise TypeError(f"{what} must be a string, not {type(content).__name__}")
    return well_formed_text(content)


class SharedContextStore:
    """SQL for shared blocks and entries; callers own transactions and events."""

    migrations: tuple[Any, ...] = MIGRATIONS

    def __init__(self, db: Scope, search_db: Scope | None = None) -> None:
        self.db = db
        self.search_db = search_db or db
        """Searches read here: a connection of their own never holds up the writers."""
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    _GET = "SELECT content FROM shared_context WHERE label = ?"

    def get(self, label: str) -> str | None:
        row = self.db.query_one(self._GET, (*self._key, label))
        return None if row is None else row[0]

    _LIST = "SELECT label, content FROM shared_context ORDER BY label"

    def list(self) -> list[tuple[str, str]]:
        return [(row[0], row[1]) for row in self.db.query(self._LIST, self._key)]

    _SET = (
        "INSERT INTO shared_context (label, content, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (label) DO UPDATE SET content = excluded.content, "
        "updated_at = excluded.updated_at"
    )

    def set(self, label: str, content: str, now_ms: int) -> None:
        self.db.execute(self._SET, (*self._key, label, content, now_ms))

    _APPEND = (
        "INSERT INTO shared_context (label, content, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (label) DO UPDATE SET content = content || excluded.content, "
        "updated_at = excluded.updated_at RETURNING content"
    )

    def append(self, label: str, delta: str, now_ms: int) -> str:
        """Append atomically; return the block's whole content after the append."""
        row = self.db.query_one(self._APPEND, (*self._key, label, delta, now_ms))
        assert row is not None
        return row[0]

    _FIND_ENTRY = "SELECT doc FROM shared_entries WHERE label = ? AND key = ?"
    _INSERT_DOC = "INSERT INTO shared_entries_fts (content, label) VALUES (?, ?)"
    _UPDATE_DOC = "UPDATE shared_entries_fts SET content = ? WHERE rowid = ?"
    _INSERT_ENTRY = "INSERT INTO shared_entries (label, key, doc, updated_at) VALUES (?, ?, ?, ?)"
    _TOUCH_ENTRY = "UPDATE shared_entries SET updated_at = ? WHERE label = ? AND key = ?"

    def index(self, label: str, key: str, content: str, now_ms: int) -> None:
        """Insert or replace the entry ``key`` of ``label`` (call inside a transaction)."""
        row = self.db.query_one(self._FIND_ENTRY, (*self._key, label, key))
        if row is None:
            doc = self._insert_document(label, content)
            self.db.execute(self._INSERT_ENTRY, (*self._key, label, key, doc, now_ms))
        else:
            self._update_document(int(row[0]), content)
            self.db.execute(self._TOUCH_ENTRY, (*self._key, now_ms, label, key))

    def _insert_document(self, label: str, content: str) -> int:
        """Index a new entry's content; its document id (newer entries get greater ones)."""
        cursor: Any = self.db.execute(self._INSERT_DOC, (content, label))  # SQLite's cursor
        return int(cursor.lastrowid)

    def _update_document(self, doc: int, content: str) -> None:
        self.db.execute(self._UPDATE_DOC, (content, doc))

    _SEARCH = (
        "SELECT content FROM shared_entries_fts WHERE shared_entries_fts MATCH ? "
        "AND label = ? ORDER BY rank, rowid DESC LIMIT ?"
    )

    def search(self, label: str, query: str, limit: int = SEARCH_LIMIT) -> str | None:
        """``label``'s best entries for ``query``: the exact phrase first, then entries holding
        every term in any order, then any term (``backend.sessions.search_terms``)."""
        found = exact_first(
            recall_tiers(query),
            lambda match, n: self._search(label, match, n),
            lambda content: content,
            limit,
        )
        return SEARCH_SEPARATOR.join(found) if found else None

    def _search(self, label: str, match: str, limit: int) -> Sequence[str]:
        """The contents of ``label``'s best entries for ``match`` (an FTS5 query)."""
        return [row[0] for row in self.search_db.query(self._SEARCH, (match, label, limit))]
