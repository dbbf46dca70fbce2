"""The agent library's tables on PostgreSQL: the twin of :mod:`backend.agents.store`.

On SQLite each person's directory file holds their agents; on PostgreSQL one set of tables
holds everyone's, so every row and every key leads with ``scope`` (the name of the person's
directory scope) and every statement below takes it as its first parameter. The methods are
the SQLite store's; only the statements and the schema are this module's. Names and ids that
lists are ordered by are ``COLLATE "C"`` (byte order, as on SQLite).
"""

from __future__ import annotations

from backend.agents.store import AgentStore
from backend.storage.postgres import PostgresScope


def _m001_agents(db: PostgresScope) -> None:
    db.execute(
        """
        CREATE TABLE agents (
            scope text COLLATE "C" NOT NULL,
            id text COLLATE "C" NOT NULL,
            latest_version bigint NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            deleted_at bigint,
            PRIMARY KEY (scope, id)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE agent_versions (
            scope text COLLATE "C" NOT NULL,
            agent_id text COLLATE "C" NOT NULL,
            version bigint NOT NULL CHECK (version >= 1),
            name text NOT NULL,
            instructions text NOT NULL,
            model_endpoint text,
            model_name text,
            temperature double precision,
            max_output_tokens bigint,
            tools text NOT NULL,
            starter_prompts text NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (scope, agent_id, version)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE agent_settings (
            scope text COLLATE "C" NOT NULL,
            key text NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (scope, key)
        )
        """
    )


# UPDATE and DELETE take the scope first through a one-row CTE, so every statement's first
# parameter is the scope whatever the order of the rest.
_SCOPED = "WITH k AS (SELECT ?::text AS scope) "
_LATEST_JOIN = (
    "FROM agents a JOIN agent_versions v "
    "ON v.scope = a.scope AND v.agent_id = a.id AND v.version = a.latest_version"
)


class PgAgentStore(AgentStore):
    """The agent library's SQL on a PostgreSQL scope (see the module docstring)."""

    migrations = (_m001_agents,)
    SELECT_HEAD = "SELECT latest_version, deleted_at FROM agents WHERE scope = ? AND id = ?"
    INSERT_AGENT = (
        "INSERT INTO agents (scope, id, latest_version, created_at, updated_at) "
        "VALUES (?, ?, 1, ?, ?)"
    )
    ADVANCE_HEAD = (
        _SCOPED + "UPDATE agents a SET latest_version = ?, updated_at = ? FROM k "
        "WHERE a.scope = k.scope AND a.id = ? AND a.latest_version = ?"
    )
    INSERT_VERSION = """
    INSERT INTO agent_versions (
        scope, agent_id, version, name, instructions, model_endpoint, model_name, temperature,
        max_output_tokens, tools, starter_prompts, created_at
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    """
    SELECT_VERSION = "SELECT * FROM agent_versions WHERE scope = ? AND agent_id = ? AND version = ?"
    SELECT_LATEST = f"SELECT v.* {_LATEST_JOIN} WHERE a.scope = ? AND a.id = ?"
    LIST_LIVE = (
        f"SELECT a.id, a.latest_version, a.updated_at, v.name {_LATEST_JOIN} "
        "WHERE a.scope = ? AND a.deleted_at IS NULL ORDER BY a.updated_at DESC, a.id"
    )
    PAGE_VERSIONS = (
        "SELECT version, name, created_at FROM agent_versions "
        "WHERE scope = ? AND agent_id = ? AND version < ? ORDER BY version DESC LIMIT ?"
    )
    DELETE_AGENT = (
        _SCOPED + "UPDATE agents a SET deleted_at = ? FROM k "
        "WHERE a.scope = k.scope AND a.id = ? AND a.deleted_at IS NULL"
    )
    GET_SETTING = "SELECT value FROM agent_settings WHERE scope = ? AND key = ?"
    VERSIONS_SAVED = "SELECT coalesce(sum(latest_version), 0) FROM agents WHERE scope = ?"
    PUT_SETTING = (
        "INSERT INTO agent_settings (scope, key, value) VALUES (?, ?, ?) "
        "ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value"
    )
    DROP_SETTING = "DELETE FROM agent_settings WHERE scope = ? AND key = ?"

    def __init__(self, db: PostgresScope) -> None:
        super().__init__(db)
        self._key = (db.name,)
