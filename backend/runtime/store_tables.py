"""The runtime's tables in each chat's own SQLite file (component ``"runtime"``): their migrations.

:class:`backend.runtime.store.RuntimeStore` runs its statements on them; the PostgreSQL twin
(:mod:`backend.runtime.pg_store`) keeps its own schema of the same columns, each table led by
the chat's scope.

Tables:

* ``runtime_conversation`` — one row: the conversation record (binding, ownership,
  ``session_state_version``, last run).
* ``runtime_session_state`` — the current state document; its version is the record's
  ``session_state_version`` (one source of truth, bumped by a compare-and-set).
* ``runtime_runs`` — every run; ``seq`` (autoincrement) is the enqueue order; a partial unique
  index makes "at most one running run per conversation" a database invariant, not a hope.
  ``claimed_by`` names the process that claimed a run, so a later process can tell a run whose
  process stopped (recover it) from one another live process is still writing (leave it).
  ``fence`` is the fencing token of the lease a run was claimed under; the conversation's
  ``fence`` is the newest token that claimed it. A claim must carry a newer token than the
  conversation's, and a commit checks that none has claimed since its own (a holder whose
  lease expired cannot commit over the run that replaced it: see ``backend.runtime.locks``).
"""

from __future__ import annotations

from backend.storage import Scope

COMPONENT = "runtime"


def _m001_runtime_tables(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE runtime_conversation (
            id TEXT PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            owner_principal_id TEXT NOT NULL,
            participant_ids TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            agent_version_policy TEXT NOT NULL
                CHECK (agent_version_policy IN ('pinned', 'latest')),
            agent_version INTEGER,
            session_state_version INTEGER NOT NULL DEFAULT 0,
            title TEXT NOT NULL DEFAULT '',
            last_run_id TEXT,
            archived_at INTEGER,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE runtime_session_state (
            conversation_id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE runtime_runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            conversation_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            status TEXT NOT NULL,
            user_message_id TEXT NOT NULL,
            assistant_message_id TEXT NOT NULL,
            agent_id TEXT NOT NULL,
            agent_version INTEGER,
            enqueued_at INTEGER NOT NULL,
            started_at INTEGER,
            finished_at INTEGER,
            error TEXT
        )
        """
    )
    db.execute("CREATE INDEX runtime_runs_by_status ON runtime_runs (conversation_id, status, seq)")
    db.execute(
        "CREATE UNIQUE INDEX runtime_runs_one_running ON runtime_runs (conversation_id) "
        "WHERE status = 'running'"
    )


def _m002_run_claimant(db: Scope) -> None:
    db.execute("ALTER TABLE runtime_runs ADD COLUMN claimed_by TEXT")


def _m003_fencing(db: Scope) -> None:
    db.execute("ALTER TABLE runtime_runs ADD COLUMN fence INTEGER")
    db.execute("ALTER TABLE runtime_conversation ADD COLUMN fence INTEGER NOT NULL DEFAULT 0")


def _m004_models(db: Scope) -> None:
    for table in ("runtime_conversation", "runtime_runs"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN model_endpoint TEXT")
        db.execute(f"ALTER TABLE {table} ADD COLUMN model_name TEXT")


def _m005_requester(db: Scope) -> None:
    db.execute("ALTER TABLE runtime_runs ADD COLUMN requested_by_id TEXT")
    db.execute("ALTER TABLE runtime_runs ADD COLUMN requested_by_name TEXT")


MIGRATIONS = [
    _m001_runtime_tables,
    _m002_run_claimant,
    _m003_fencing,
    _m004_models,
    _m005_requester,
]
