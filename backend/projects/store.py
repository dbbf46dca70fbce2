"""A person's projects as tables in their directory database, and every SQL statement on them.

Tables (migration component ``projects``), beside the chat index so a backup of the
directory carries them::

    projects(id PK, name, instructions, use_personal_memory, memory, created_at, updated_at,
             deleted_at)                                  NULL while the project is live
    project_chats(chat_id PK, project_id, added_at)        a chat is in at most one project
    project_files(id PK, project_id, name, media_type, size, text_chars, created_at)
    project_chunks(doc INTEGER PK, file_id, project_id, seq, text, UNIQUE(file_id, seq))
    project_chunks_fts  fts5(text, project_id UNINDEXED)   rowid = project_chunks.doc

Invariants:

* A project's memory is one text column appended by **one statement** (``memory || ?``), so
  concurrent ``remember`` calls all land, as shared memory's appends do.
* A chat's membership row outlives a soft delete of the chat: restoring the chat (undo) puts
  it back in its project. Lists of a project's chats ask the directory which are live.
* A project deleted with its chats keeps its row, marked ``deleted_at``, and its chats'
  memberships until the chats' soft-delete window has passed (one undo brings all back);
  every read of projects sees live ones only.
* Chunks are keyed by ``doc``: an embedding of a chunk (meaning-based search, later) is a row
  keyed by the same ``doc``; full-text search reads ``project_chunks_fts``.

The statements are class attributes: the PostgreSQL twin (:mod:`backend.projects.pg_store`)
rewrites them to take the directory's scope first (``_key``, empty here). Callers own
transactions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from backend.projects.values import ChunkHit, Project, ProjectFile
from backend.sessions.search import FTS_TOKENIZER
from backend.storage import Scope

COMPONENT = "projects"


def _m001_projects(db: Scope) -> None:
    db.execute(
        "CREATE TABLE projects (id TEXT PRIMARY KEY, name TEXT NOT NULL, "
        "instructions TEXT NOT NULL, use_personal_memory INTEGER NOT NULL, "
        "memory TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) "
        "WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE project_chats (chat_id TEXT PRIMARY KEY, project_id TEXT NOT NULL, "
        "added_at INTEGER NOT NULL) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX project_chats_by_project ON project_chats (project_id, chat_id)")
    db.execute(
        "CREATE TABLE project_files (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, "
        "name TEXT NOT NULL, media_type TEXT NOT NULL, size INTEGER NOT NULL, "
        "text_chars INTEGER NOT NULL, created_at INTEGER NOT NULL) WITHOUT ROWID"
    )
    db.execute("CREATE INDEX project_files_by_project ON project_files (project_id, created_at)")
    db.execute(
        "CREATE TABLE project_chunks (doc INTEGER PRIMARY KEY, file_id TEXT NOT NULL, "
        "project_id TEXT NOT NULL, seq INTEGER NOT NULL, text TEXT NOT NULL, "
        "UNIQUE (file_id, seq))"
    )
    db.execute(
        "CREATE VIRTUAL TABLE project_chunks_fts USING fts5("
        f"text, project_id UNINDEXED, tokenize = '{FTS_TOKENIZER}')"
    )


def _m002_soft_delete(db: Scope) -> None:
    """A project deleted with its chats is kept, marked, until its undo window has passed."""
    db.execute("ALTER TABLE projects ADD COLUMN deleted_at INTEGER")


MIGRATIONS = (_m001_projects, _m002_soft_delete)

_PROJECT_COLUMNS = "id, name, instructions, use_personal_memory, created_at, updated_at"
_FILE_COLUMNS = "id, project_id, name, media_type, size, text_chars, created_at"


def _project(row: Any) -> Project:
    return Project(row[0], row[1], row[2], bool(row[3]), row[4], row[5])


def chunk_hit(project_id: str, row: Any) -> ChunkHit:
    """A search row ``(doc, file_id, file name, seq, text, rank)`` as a hit."""
    return ChunkHit(project_id, int(row[0]), row[1], row[2], int(row[3]), row[4], float(row[5]))


def _file(row: Any) -> ProjectFile:
    return ProjectFile(*row)


class ProjectStore:
    """SQL for projects, their chats, memory, files and chunks (see the module docstring)."""

    migrations: tuple[Callable[[Any], None], ...] = MIGRATIONS

    def __init__(self, db: Scope, search_db: Scope | None = None) -> None:
        self.db = db
        self.search_db = search_db or db
        self._key: tuple[Any, ...] = ()
        db.migrate(COMPONENT, self.migrations)

    # ── projects ────────────────────────────────────────────────────

    _INSERT = (
        "INSERT INTO projects (id, name, instructions, use_personal_memory, memory, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, '', ?, ?)"
    )

    def insert(self, project: Project) -> None:
        self.db.execute(
            self._INSERT,
            (
                *self._key,
                project.id,
                project.name,
                project.instructions,
                int(project.use_personal_memory),
                project.created_at,
                project.updated_at,
            ),
        )

    _LIST = (
        f"SELECT {_PROJECT_COLUMNS} FROM projects WHERE deleted_at IS NULL ORDER BY created_at, id"
    )
    _GET = f"SELECT {_PROJECT_COLUMNS} FROM projects WHERE id = ? AND deleted_at IS NULL"
    _DELETED_AT = "SELECT deleted_at FROM projects WHERE id = ?"
    _MARK_DELETED = "UPDATE projects SET deleted_at = ? WHERE id = ?"
    _DELETED_BEFORE = (
        "SELECT id FROM projects WHERE deleted_at IS NOT NULL AND deleted_at < ? ORDER BY id"
    )

    def list_projects(self) -> list[Project]:
        return [_project(row) for row in self.db.query(self._LIST, self._key)]

    def get(self, project_id: str) -> Project | None:
        row = self.db.query_one(self._GET, (*self._key, project_id))
        return None if row is None else _project(row)

    def deleted_at(self, project_id: str) -> int | None:
        """When the project was soft-deleted (None: live, or no such project)."""
        row = self.db.query_one(self._DELETED_AT, (*self._key, project_id))
        return None if row is None or row[0] is None else int(row[0])

    def mark_deleted(self, project_id: str, at: int | None) -> None:
        """Soft-delete the project at ``at`` (None: live again)."""
        self.db.execute(self._MARK_DELETED, (*self._key, at, project_id))

    def deleted_before(self, cutoff_ms: int) -> list[str]:
        """Soft-deleted projects whose window ended (their rows are purged)."""
        return [str(row[0]) for row in self.db.query(self._DELETED_BEFORE, (*self._key, cutoff_ms))]

    _UPDATE = (
        "UPDATE projects SET name = ?, instructions = ?, use_personal_memory = ?, "
        "updated_at = ? WHERE id = ?"
    )

    def update(self, project: Project) -> None:
        values = (project.name, project.instructions, int(project.use_personal_memory))
        self.db.execute(self._UPDATE, (*self._key, *values, project.updated_at, project.id))

    _DELETE = "DELETE FROM projects WHERE id = ?"

    def delete(self, project_id: str) -> None:
        """The project, its memberships, files and chunks (the chats themselves stay)."""
        for file in self.files(project_id):
            self.delete_file(file.id)
        self.db.execute(self._DELETE_MEMBERS, (*self._key, project_id))
        self.db.execute(self._DELETE, (*self._key, project_id))

    # ── memory ──────────────────────────────────────────────────────

    _MEMORY = "SELECT memory FROM projects WHERE id = ?"
    _APPEND_MEMORY = (
        "UPDATE projects SET memory = memory || ?, updated_at = ? "
        "WHERE id = ? AND deleted_at IS NULL RETURNING memory"
    )
    _SET_MEMORY = "UPDATE projects SET memory = ?, updated_at = ? WHERE id = ?"

    def memory(self, project_id: str) -> str | None:
        row = self.db.query_one(self._MEMORY, (*self._key, project_id))
        return None if row is None else str(row[0])

    def append_memory(self, project_id: str, delta: str, now_ms: int) -> bool:
        """Append atomically; False when the project is gone."""
        row = self.db.query_one(self._APPEND_MEMORY, (*self._key, delta, now_ms, project_id))
        return row is not None

    def set_memory(self, project_id: str, content: str, now_ms: int) -> None:
        self.db.execute(self._SET_MEMORY, (*self._key, content, now_ms, project_id))

    # ── chats ───────────────────────────────────────────────────────

    _PROJECT_OF = "SELECT project_id FROM project_chats WHERE chat_id = ?"
    _MEMBERS = "SELECT chat_id FROM project_chats WHERE project_id = ? ORDER BY chat_id"
    _ALL_MEMBERS = "SELECT chat_id, project_id FROM project_chats"
    _PUT_MEMBER = (
        "INSERT INTO project_chats (chat_id, project_id, added_at) VALUES (?, ?, ?) "
        "ON CONFLICT (chat_id) DO UPDATE SET project_id = excluded.project_id, "
        "added_at = excluded.added_at"
    )
    _DROP_MEMBER = "DELETE FROM project_chats WHERE chat_id = ?"
    _DELETE_MEMBERS = "DELETE FROM project_chats WHERE project_id = ?"

    def project_of(self, chat_id: str) -> str | None:
        row = self.db.query_one(self._PROJECT_OF, (*self._key, chat_id))
        return None if row is None else str(row[0])

    def members(self, project_id: str) -> list[str]:
        return [str(row[0]) for row in self.db.query(self._MEMBERS, (*self._key, project_id))]

    def memberships(self) -> dict[str, str]:
        """Every chat in a project → its project."""
        return {str(row[0]): str(row[1]) for row in self.db.query(self._ALL_MEMBERS, self._key)}

    def put_member(self, chat_id: str, project_id: str, now_ms: int) -> None:
        self.db.execute(self._PUT_MEMBER, (*self._key, chat_id, project_id, now_ms))

    def drop_member(self, chat_id: str) -> None:
        self.db.execute(self._DROP_MEMBER, (*self._key, chat_id))

    # ── files and chunks ────────────────────────────────────────────

    _INSERT_FILE = (
        "INSERT INTO project_files (id, project_id, name, media_type, size, text_chars, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    _FILES = (
        f"SELECT {_FILE_COLUMNS} FROM project_files WHERE project_id = ? ORDER BY created_at, id"
    )
    _FILE = f"SELECT {_FILE_COLUMNS} FROM project_files WHERE id = ?"
    _INSERT_CHUNK = (
        "INSERT INTO project_chunks (file_id, project_id, seq, text) VALUES (?, ?, ?, ?) "
        "RETURNING doc"
    )
    _INSERT_CHUNK_FTS = "INSERT INTO project_chunks_fts (rowid, text, project_id) VALUES (?, ?, ?)"
    _CHUNKS_OF_FILE = "SELECT seq, text FROM project_chunks WHERE file_id = ? ORDER BY seq"
    _DELETE_CHUNK_FTS = (
        "DELETE FROM project_chunks_fts WHERE rowid IN "
        "(SELECT doc FROM project_chunks WHERE file_id = ?)"
    )
    _DELETE_CHUNKS = "DELETE FROM project_chunks WHERE file_id = ?"
    _DELETE_FILE = "DELETE FROM project_files WHERE id = ?"

    def insert_file(self, file: ProjectFile, chunks: Sequence[str]) -> None:
        row = (file.id, file.project_id, file.name, file.media_type, file.size, file.text_chars)
        self.db.execute(self._INSERT_FILE, (*self._key, *row, file.created_at))
        for seq, text in enumerate(chunks):
            found = self.db.query_one(
                self._INSERT_CHUNK, (*self._key, file.id, file.project_id, seq, text)
            )
            assert found is not None
            self._index_chunk(int(found[0]), file.project_id, text)

    def _index_chunk(self, doc: int, project_id: str, text: str) -> None:
        self.db.execute(self._INSERT_CHUNK_FTS, (doc, text, project_id))

    _CHUNKS_AFTER = (
        "SELECT doc, project_id, text FROM project_chunks WHERE doc > ? ORDER BY doc LIMIT ?"
    )

    def index_every_chunk(self, batch: int = 500) -> int:
        """Write the search rows of every chunk, ``batch`` at a time; how many chunks.

        For chunks copied without them (``chats migrate``: each engine indexes its own way).
        """
        indexed, after = 0, -1
        while rows := self.db.query(self._CHUNKS_AFTER, (*self._key, after, batch)):
            for row in rows:
                self._index_chunk(int(row[0]), str(row[1]), str(row[2]))
            indexed += len(rows)
            after = int(rows[-1][0])
        return indexed

    def files(self, project_id: str) -> list[ProjectFile]:
        return [_file(row) for row in self.db.query(self._FILES, (*self._key, project_id))]

    def file(self, file_id: str) -> ProjectFile | None:
        row = self.db.query_one(self._FILE, (*self._key, file_id))
        return None if row is None else _file(row)

    def chunks_of(self, file_id: str) -> list[str]:
        return [str(row[1]) for row in self.db.query(self._CHUNKS_OF_FILE, (*self._key, file_id))]

    def delete_file(self, file_id: str) -> None:
        self._delete_chunk_index(file_id)
        self.db.execute(self._DELETE_CHUNKS, (*self._key, file_id))
        self.db.execute(self._DELETE_FILE, (*self._key, file_id))

    def _delete_chunk_index(self, file_id: str) -> None:
        self.db.execute(self._DELETE_CHUNK_FTS, (file_id,))

    _SEARCH = (
        "SELECT c.doc, c.file_id, f.name, c.seq, c.text, project_chunks_fts.rank "
        "FROM project_chunks_fts JOIN project_chunks AS c ON c.doc = project_chunks_fts.rowid "
        "JOIN project_files AS f ON f.id = c.file_id "
        "WHERE project_chunks_fts MATCH ? AND project_chunks_fts.project_id = ? "
        "ORDER BY project_chunks_fts.rank, c.doc LIMIT ?"
    )

    def search_chunks(self, project_id: str, match: str, limit: int) -> list[ChunkHit]:
        """The best chunks of ``project_id`` for ``match`` (an FTS5 query), best first."""
        rows = self.search_db.query(self._SEARCH, (match, project_id, limit))
        return [chunk_hit(project_id, row) for row in rows]
