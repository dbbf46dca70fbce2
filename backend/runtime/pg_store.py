"""The runtime's tables on PostgreSQL: the twin of :mod:`backend.runtime.store`.

On SQLite the runtime's tables live in each chat's own file, beside its conversation; on
PostgreSQL one set of tables holds every chat's, each row and key led by ``scope`` (the chat's
scope: the same scope as its conversation tables, so a turn's commit still writes its message,
its session state and its run record in one transaction). Every statement takes the scope as
its first parameter; the methods are the SQLite store's, only the schema and the statements
are this module's.

* ``seq`` is an identity column shared by every scope: it still grows in enqueue order within
  a chat (writers of one scope are serialised by the scope's write lock), which is all a run's
  ``seq`` promises.
* "At most one running run per conversation" stays a database invariant: a partial unique
  index on ``(scope, conversation_id) WHERE status = 'running'``.
* **Fencing inside the commit.** :meth:`PgRuntimeStore.check_fence` is one conditional
  ``UPDATE`` of the conversation's fence row, run first in the transaction that writes for a
  run: it matches only while the run is still ``running`` and no newer token has claimed the
  conversation, and it keeps that row locked until the commit, so a newer claim (which must
  advance the same row) waits for this commit or this one sees it; matching no row raises
  :class:`~backend.errors.LeaseLostError` and the caller's transaction rolls back. The
  scope's write lock serialises the two already; the row lock keeps the check sound on its
  own. (One difference from SQLite: a run whose conversation has no record cannot commit
  here; the runtime always records the conversation before it queues a run.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import override

from backend.errors import LeaseLostError
from backend.runtime.records import RunRecord
from backend.runtime.store import RuntimeStore
from backend.storage import Scope

if TYPE_CHECKING:
    from backend.storage.postgres import PostgresScope


def _m001_runtime_tables(db: PostgresScope) -> None:
    db.execute(
        """
        CREATE TABLE runtime_conversation (
            scope text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            tenant_id text NOT NULL,
            owner_principal_id text NOT NULL,
            participant_ids text NOT NULL,
            agent_id text NOT NULL,
            agent_version_policy text NOT NULL
                CHECK (agent_version_policy IN ('pinned', 'latest')),
            agent_version bigint,
            session_state_version bigint NOT NULL DEFAULT 0,
            title text NOT NULL DEFAULT '',
            last_run_id text,
            archived_at bigint,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            fence bigint NOT NULL DEFAULT 0,
            model_endpoint text,
            model_name text,
            PRIMARY KEY (scope, id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE runtime_session_state (
            scope text COLLATE "C" NOT NULL,
            conversation_id text COLLATE "C" NOT NULL,
            state text NOT NULL,
            bytes bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (scope, conversation_id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE runtime_runs (
            scope text COLLATE "C" NOT NULL,
            seq bigint GENERATED ALWAYS AS IDENTITY,
            id text COLLATE "C" NOT NULL,
            conversation_id text COLLATE "C" NOT NULL,
            kind text NOT NULL,
            status text NOT NULL,
            user_message_id text NOT NULL,
            assistant_message_id text NOT NULL,
            agent_id text NOT NULL,
            agent_version bigint,
            enqueued_at bigint NOT NULL,
            started_at bigint,
            finished_at bigint,
            error text,
            claimed_by text,
            fence bigint,
            model_endpoint text,
            model_name text,
            PRIMARY KEY (scope, id)
        )
        """
    )
    db.execute(
        "CREATE INDEX runtime_runs_by_status ON runtime_runs (scope, conversation_id, status, seq)"
    )
    db.execute(
        "CREATE UNIQUE INDEX runtime_runs_one_running ON runtime_runs (scope, conversation_id) "
        "WHERE status = 'running'"
    )


def _m002_requester(db: PostgresScope) -> None:
    db.execute("ALTER TABLE runtime_runs ADD COLUMN requested_by_id text")
    db.execute("ALTER TABLE runtime_runs ADD COLUMN requested_by_name text")


# UPDATE takes the scope first through a one-row CTE, so every statement's first parameter is
# the scope whatever the order of the rest.
_SCOPED = "WITH k AS (SELECT ?::text AS scope) "
_CONVERSATION_COLUMNS = (
    "id, tenant_id, owner_principal_id, participant_ids, agent_id, agent_version_policy, "
    "agent_version, session_state_version, title, last_run_id, archived_at, created_at, "
    "updated_at, model_endpoint, model_name"
)
# An import replaces the whole record, as SQLite's INSERT OR REPLACE does (the fence too).
_REPLACE_CONVERSATION = ", ".join(
    f"{column} = excluded.{column}" for column in (*_CONVERSATION_COLUMNS.split(", ")[1:], "fence")
)


def _conversation_update(assignments: str, condition: str = "") -> str:
    return (
        f"{_SCOPED}UPDATE runtime_conversation c SET {assignments} FROM k "
        f"WHERE c.scope = k.scope AND c.id = ?{condition}"
    )


class PgRuntimeStore(RuntimeStore):
    """The runtime's SQL on a PostgreSQL scope (see the module docstring)."""

    engine_kind = "postgresql"
    migrations = (_m001_runtime_tables, _m002_requester)
    SELECT_CONVERSATION = "SELECT * FROM runtime_conversation WHERE scope = ? AND id = ?"
    INSERT_CONVERSATION = """
    INSERT INTO runtime_conversation (
        scope, id, tenant_id, owner_principal_id, participant_ids, agent_id,
        agent_version_policy, agent_version, session_state_version, title, created_at,
        updated_at
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)
    ON CONFLICT (scope, id) DO NOTHING
    """
    UPDATE_BINDING = _conversation_update(
        "agent_id = ?, agent_version_policy = ?, agent_version = ?, updated_at = ?"
    )
    UPDATE_MODEL = _conversation_update("model_endpoint = ?, model_name = ?, updated_at = ?")
    UPDATE_TITLE = _conversation_update("title = ?, updated_at = ?")
    UPDATE_LAST_RUN = _conversation_update("last_run_id = ?, updated_at = ?")
    BUMP_STATE_VERSION = _conversation_update(
        "session_state_version = c.session_state_version + 1, updated_at = ?",
        " AND c.session_state_version = ?",
    )
    SELECT_STATE = """
    SELECT c.session_state_version AS version, s.state, s.bytes, s.updated_at
    FROM runtime_conversation c LEFT JOIN runtime_session_state s
        ON s.scope = c.scope AND s.conversation_id = c.id
    WHERE c.scope = ? AND c.id = ?
    """
    UPSERT_STATE = """
    INSERT INTO runtime_session_state (scope, conversation_id, state, bytes, updated_at)
    VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (scope, conversation_id) DO UPDATE
    SET state = excluded.state, bytes = excluded.bytes, updated_at = excluded.updated_at
    """
    INSERT_RUN = """
    INSERT INTO runtime_runs (
        scope, id, conversation_id, kind, status, user_message_id, assistant_message_id,
        agent_id, agent_version, enqueued_at, requested_by_id, requested_by_name
    ) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)
    """
    IMPORT_CONVERSATION = (
        f"INSERT INTO runtime_conversation (scope, {_CONVERSATION_COLUMNS}) "
        f"VALUES ({', '.join(['?'] * 16)}) "
        f"ON CONFLICT (scope, id) DO UPDATE SET {_REPLACE_CONVERSATION}"
    )
    SELECT_RUN = "SELECT * FROM runtime_runs WHERE scope = ? AND id = ?"
    SELECT_OPEN_RUNS = """
    SELECT * FROM runtime_runs
    WHERE scope = ? AND conversation_id = ? AND status IN ('queued', 'running')
    ORDER BY seq
    """
    SELECT_NEXT_QUEUED = """
    SELECT * FROM runtime_runs WHERE scope = ? AND conversation_id = ? AND status = 'queued'
    ORDER BY enqueued_at, seq LIMIT 1
    """
    CLAIM_RUN = (
        f"{_SCOPED}UPDATE runtime_runs r SET status = 'running', started_at = ?, agent_id = ?, "
        "agent_version = ?, claimed_by = ?, fence = ?, model_endpoint = ?, model_name = ? "
        "FROM k WHERE r.scope = k.scope AND r.id = ? AND r.status = 'queued'"
    )
    ADVANCE_FENCE = _conversation_update("fence = ?", " AND c.fence < ?")
    COUNT_RUNS = (
        "SELECT COUNT(*) FROM runtime_runs WHERE scope = ? AND conversation_id = ? AND status = ?"
    )
    FINISH_RUN = (
        f"{_SCOPED}UPDATE runtime_runs r SET status = ?, finished_at = ?, error = ? FROM k "
        "WHERE r.scope = k.scope AND r.id = ? AND r.status IN ('queued', 'running')"
    )

    FENCED_COMMIT = """
    WITH k AS (SELECT ?::text AS scope, ?::text AS run_id, ?::bigint AS fence)
    UPDATE runtime_conversation c SET fence = c.fence
    FROM k, runtime_runs r
    WHERE r.scope = k.scope AND r.id = k.run_id AND c.scope = k.scope AND c.id = r.conversation_id
        AND r.status = 'running' AND (k.fence IS NULL OR c.fence <= k.fence)
    """

    def __init__(self, db: PostgresScope) -> None:
        super().__init__(db)
        self._key = (db.name,)

    @override
    def check_fence(self, run: RunRecord) -> None:
        """The fence as a locking ``UPDATE`` that must match (see the module docstring)."""
        if self.db.write(self.FENCED_COMMIT, (*self._key, run.id, run.fence)) != 1:
            self.load_run(run.id)  # RunNotFoundError when the run is gone altogether
            raise LeaseLostError(run.conversation_id, run.fence)


def runtime_store_for(db: Scope) -> RuntimeStore:
    """The runtime store twin for the scope's engine (psycopg is loaded only on PostgreSQL)."""
    if db.engine_kind == "postgresql":
        from backend.storage.postgres import PostgresScope

        assert isinstance(db, PostgresScope)
        return PgRuntimeStore(db)
    return RuntimeStore(db)
