"""The projects tables on PostgreSQL: the twin of :mod:`backend.projects.store`.

One set of tables holds every person's projects, each row and key led by ``scope`` (the name
of the person's directory scope), the first parameter of every statement. Chunk search
emulates FTS5 as shared memory's does (:mod:`backend.chats.pg_shared`): a chunk's text as
``tsvector`` parts carrying the scope's lexeme, any word of the query matching, ranked
``-max(ts_rank)``, ties oldest chunk first (``doc``, as on SQLite).
"""

from __future__ import annotations

from typing_extensions import override

from backend.chats.pg_index_store import scoped_tsquery, scoped_tsvector
from backend.chats.pg_shared import PARTS_RANK, SCOPED, create_parts_table
from backend.projects.store import ProjectStore, chunk_hit
from backend.projects.values import ChunkHit
from backend.sessions.pg_fts import document_parts, match_tsquery
from backend.storage import Scope
from backend.storage.postgres import PostgresScope


def _m001_projects(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE projects (
            scope text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            name text NOT NULL,
            instructions text NOT NULL,
            use_personal_memory integer NOT NULL,
            memory text NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (scope, id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE project_chats (
            scope text COLLATE "C" NOT NULL,
            chat_id text COLLATE "C" NOT NULL,
            project_id text COLLATE "C" NOT NULL,
            added_at bigint NOT NULL,
            PRIMARY KEY (scope, chat_id)
        )
        """
    )
    db.execute(
        "CREATE INDEX project_chats_by_project ON project_chats (scope, project_id, chat_id)"
    )
    db.execute(
        """
        CREATE TABLE project_files (
            scope text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            project_id text COLLATE "C" NOT NULL,
            name text NOT NULL,
            media_type text NOT NULL,
            size bigint NOT NULL,
            text_chars bigint NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (scope, id)
        )
        """
    )
    db.execute(
        "CREATE INDEX project_files_by_project ON project_files (scope, project_id, created_at)"
    )
    db.execute(
        """
        CREATE TABLE project_chunks (
            scope text COLLATE "C" NOT NULL,
            doc bigint GENERATED ALWAYS AS IDENTITY,
            file_id text COLLATE "C" NOT NULL,
            project_id text COLLATE "C" NOT NULL,
            seq integer NOT NULL,
            text text NOT NULL,
            PRIMARY KEY (scope, doc),
            UNIQUE (scope, file_id, seq)
        )
        """
    )
    project = 'project_id text COLLATE "C" NOT NULL'
    create_parts_table(db, "project_chunk_parts", "project_chunks", columns=(project,))


def _m002_soft_delete(db: Scope) -> None:
    db.execute("ALTER TABLE projects ADD COLUMN deleted_at bigint")


# UPDATE takes the scope first through a one-row CTE (SCOPED), as shared memory's does.


class PgProjectStore(ProjectStore):
    """The projects' SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_projects, _m002_soft_delete)
    _INSERT = (
        "INSERT INTO projects (scope, id, name, instructions, use_personal_memory, memory, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, '', ?, ?)"
    )
    _LIST = (
        "SELECT id, name, instructions, use_personal_memory, created_at, updated_at "
        "FROM projects WHERE scope = ? AND deleted_at IS NULL ORDER BY created_at, id"
    )
    _GET = (
        "SELECT id, name, instructions, use_personal_memory, created_at, updated_at "
        "FROM projects WHERE scope = ? AND id = ? AND deleted_at IS NULL"
    )
    _DELETED_AT = "SELECT deleted_at FROM projects WHERE scope = ? AND id = ?"
    _MARK_DELETED = (
        SCOPED + "UPDATE projects AS p SET deleted_at = ? FROM k "
        "WHERE p.scope = k.scope AND p.id = ?"
    )
    _DELETED_BEFORE = (
        "SELECT id FROM projects WHERE scope = ? AND deleted_at IS NOT NULL "
        "AND deleted_at < ? ORDER BY id"
    )
    _UPDATE = (
        SCOPED + "UPDATE projects AS p SET name = ?, instructions = ?, "
        "use_personal_memory = ?, updated_at = ? FROM k WHERE p.scope = k.scope AND p.id = ?"
    )
    _DELETE = "DELETE FROM projects WHERE scope = ? AND id = ?"
    _MEMORY = "SELECT memory FROM projects WHERE scope = ? AND id = ?"
    _APPEND_MEMORY = (
        SCOPED + "UPDATE projects AS p SET memory = p.memory || ?, updated_at = ? FROM k "
        "WHERE p.scope = k.scope AND p.id = ? AND p.deleted_at IS NULL RETURNING p.memory"
    )
    _SET_MEMORY = (
        SCOPED + "UPDATE projects AS p SET memory = ?, updated_at = ? FROM k "
        "WHERE p.scope = k.scope AND p.id = ?"
    )
    _PROJECT_OF = "SELECT project_id FROM project_chats WHERE scope = ? AND chat_id = ?"
    _MEMBERS = (
        "SELECT chat_id FROM project_chats WHERE scope = ? AND project_id = ? ORDER BY chat_id"
    )
    _ALL_MEMBERS = "SELECT chat_id, project_id FROM project_chats WHERE scope = ?"
    _PUT_MEMBER = (
        "INSERT INTO project_chats (scope, chat_id, project_id, added_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (scope, chat_id) DO UPDATE SET project_id = excluded.project_id, "
        "added_at = excluded.added_at"
    )
    _DROP_MEMBER = "DELETE FROM project_chats WHERE scope = ? AND chat_id = ?"
    _DELETE_MEMBERS = "DELETE FROM project_chats WHERE scope = ? AND project_id = ?"
    _INSERT_FILE = (
        "INSERT INTO project_files (scope, id, project_id, name, media_type, size, text_chars, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    _FILES = (
        "SELECT id, project_id, name, media_type, size, text_chars, created_at "
        "FROM project_files WHERE scope = ? AND project_id = ? ORDER BY created_at, id"
    )
    _FILE = (
        "SELECT id, project_id, name, media_type, size, text_chars, created_at "
        "FROM project_files WHERE scope = ? AND id = ?"
    )
    _INSERT_CHUNK = (
        "INSERT INTO project_chunks (scope, file_id, project_id, seq, text) "
        "VALUES (?, ?, ?, ?, ?) RETURNING doc"
    )
    _INSERT_PART = (
        "INSERT INTO project_chunk_parts (scope, doc, part, project_id, tsv) "
        "VALUES (?, ?, ?, ?, ?::tsvector)"
    )
    _CHUNKS_OF_FILE = (
        "SELECT seq, text FROM project_chunks WHERE scope = ? AND file_id = ? ORDER BY seq"
    )
    _CHUNKS_AFTER = (
        "SELECT doc, project_id, text FROM project_chunks WHERE scope = ? AND doc > ? "
        "ORDER BY doc LIMIT ?"
    )
    _DELETE_CHUNKS = "DELETE FROM project_chunks WHERE scope = ? AND file_id = ?"
    _DELETE_FILE = "DELETE FROM project_files WHERE scope = ? AND id = ?"
    # Starts with SELECT, so the scope runs it as a read (see pg_index_store's search).
    _SEARCH = f"""
        SELECT c.doc, c.file_id, f.name, c.seq, c.text, h.rank
        FROM (SELECT ?::text AS scope, ?::tsquery AS q, ?::tsquery AS scoped) AS k
        CROSS JOIN LATERAL (
            SELECT p.doc, -max({PARTS_RANK}) AS rank
            FROM project_chunk_parts AS p
            WHERE p.scope = k.scope AND p.tsv @@ k.scoped AND p.project_id = ?
            GROUP BY p.doc
        ) AS h
        JOIN project_chunks AS c ON c.scope = k.scope AND c.doc = h.doc
        JOIN project_files AS f ON f.scope = k.scope AND f.id = c.file_id
        ORDER BY h.rank, h.doc
        LIMIT ?
    """

    def __init__(self, db: PostgresScope, search_db: Scope | None = None) -> None:
        super().__init__(db, search_db)
        self._key = (db.name,)

    @override
    def _index_chunk(self, doc: int, project_id: str, text: str) -> None:
        scope = self._key[0]
        parts = [
            (scope, doc, number, project_id, scoped_tsvector(part.tsvector, scope))
            for number, part in enumerate(document_parts(text))
        ]
        if parts:
            self.db.executemany(self._INSERT_PART, parts)

    @override
    def _delete_chunk_index(self, file_id: str) -> None:
        """The parts go with their chunks (``ON DELETE CASCADE``)."""

    @override
    def search_chunks(self, project_id: str, match: str, limit: int) -> list[ChunkHit]:
        query = match_tsquery(match)
        if query is None:
            return []
        scoped = scoped_tsquery(query, self._key[0])
        rows = self.search_db.query(self._SEARCH, (*self._key, query, scoped, project_id, limit))
        return [chunk_hit(project_id, row) for row in rows]
