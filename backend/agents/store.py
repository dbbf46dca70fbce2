"""The agent library's tables, inside the user's directory database (component ``agents``).

Tables::

    agents(id PK, latest_version, created_at, updated_at, deleted_at)          WITHOUT ROWID
    agent_versions(agent_id, version, name, instructions, model_endpoint, model_name,
                   temperature, max_output_tokens, tools JSON, starter_prompts JSON,
                   created_at, PK(agent_id, version))                         WITHOUT ROWID
    agent_settings(key PK, value)    the user's default agent                 WITHOUT ROWID

Invariants: a version row is written once and never updated (immutable versions); an agent's
``latest_version`` moves only forward, in the transaction that inserts that version, so a
reader never sees a head pointing at a missing row. A deleted agent keeps its rows: chats
bound to it still run. Reads take one version by key: no query loads an agent's whole
history (LibreChat loaded 125 versions to show one agent); history is paged.

Callers (:mod:`backend.agents.library`) own transactions. The PostgreSQL twin
(:mod:`backend.agents.pg_store`) keeps the same tables for every person in one database, keyed
by the person's scope: its statements are the class attributes below, rewritten to take the
scope as their first parameter (``_key``), and every method here runs on both.
"""

from __future__ import annotations

import json
from typing import Any

from backend.agents.definition import AgentSpec, AgentSummary, AgentVersion, VersionInfo
from backend.models import ModelRef
from backend.storage import Row, Scope, well_formed_text

COMPONENT = "agents"
DEFAULT_AGENT_KEY = "default_agent"


def _m001_agents(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE agents (
            id TEXT PRIMARY KEY,
            latest_version INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            deleted_at INTEGER
        ) WITHOUT ROWID
        """
    )
    db.execute(
        """
        CREATE TABLE agent_versions (
            agent_id TEXT NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1),
            name TEXT NOT NULL,
            instructions TEXT NOT NULL,
            model_endpoint TEXT,
            model_name TEXT,
            temperature REAL,
            max_output_tokens INTEGER,
            tools TEXT NOT NULL,
            starter_prompts TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (agent_id, version)
        ) WITHOUT ROWID
        """
    )
    db.execute(
        "CREATE TABLE agent_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
    )


MIGRATIONS = (_m001_agents,)

_SELECT_HEAD = "SELECT latest_version, deleted_at FROM agents WHERE id = ?"
_INSERT_AGENT = """
INSERT INTO agents (id, latest_version, created_at, updated_at) VALUES (?, 1, ?, ?)
"""
_ADVANCE_HEAD = """
UPDATE agents SET latest_version = ?, updated_at = ? WHERE id = ? AND latest_version = ?
"""
_INSERT_VERSION = """
INSERT INTO agent_versions (
    agent_id, version, name, instructions, model_endpoint, model_name, temperature,
    max_output_tokens, tools, starter_prompts, created_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
_SELECT_VERSION = "SELECT * FROM agent_versions WHERE agent_id = ? AND version = ?"
_SELECT_LATEST = """
SELECT v.* FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.latest_version
WHERE a.id = ?
"""
_LIST_LIVE = """
SELECT a.id, a.latest_version, a.updated_at, v.name
FROM agents a JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.latest_version
WHERE a.deleted_at IS NULL
ORDER BY a.updated_at DESC, a.id
"""
_PAGE_VERSIONS = """
SELECT version, name, created_at FROM agent_versions
WHERE agent_id = ? AND version < ? ORDER BY version DESC LIMIT ?
"""
_DELETE_AGENT = "UPDATE agents SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL"
_GET_SETTING = "SELECT value FROM agent_settings WHERE key = ?"
# Grows with every saved version (heads only move forward): "did any agent change?"
_VERSIONS_SAVED = "SELECT coalesce(sum(latest_version), 0) FROM agents"
_PUT_SETTING = """
INSERT INTO agent_settings (key, value) VALUES (?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value
"""
_DROP_SETTING = "DELETE FROM agent_settings WHERE key = ?"


class AgentStore:
    """SQL of the agent library (see the module docstring)."""

    migrations: tuple[Any, ...] = MIGRATIONS
    SELECT_HEAD = _SELECT_HEAD
    INSERT_AGENT = _INSERT_AGENT
    ADVANCE_HEAD = _ADVANCE_HEAD
    INSERT_VERSION = _INSERT_VERSION
    SELECT_VERSION = _SELECT_VERSION
    SELECT_LATEST = _SELECT_LATEST
    LIST_LIVE = _LIST_LIVE
    PAGE_VERSIONS = _PAGE_VERSIONS
    DELETE_AGENT = _DELETE_AGENT
    GET_SETTING = _GET_SETTING
    VERSIONS_SAVED = _VERSIONS_SAVED
    PUT_SETTING = _PUT_SETTING
    DROP_SETTING = _DROP_SETTING

    def __init__(self, db: Scope) -> None:
        self.db = db
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    def head(self, agent_id: str) -> tuple[int, bool] | None:
        """``(latest_version, deleted)`` of an agent, or ``None``."""
        row = self.db.query_one(self.SELECT_HEAD, (*self._key, agent_id))
        return (int(row[0]), row[1] is not None) if row else None

    def insert_agent(self, agent_id: str, spec: AgentSpec, now: int) -> None:
        self.db.execute(self.INSERT_AGENT, (*self._key, agent_id, now, now))
        self._insert_version(agent_id, 1, spec, now)

    def append_version(self, agent_id: str, after: int, spec: AgentSpec, now: int) -> bool:
        """Insert version ``after + 1`` if ``after`` is still the newest; False otherwise."""
        if self.db.write(self.ADVANCE_HEAD, (*self._key, after + 1, now, agent_id, after)) != 1:
            return False
        self._insert_version(agent_id, after + 1, spec, now)
        return True

    def _insert_version(self, agent_id: str, version: int, spec: AgentSpec, now: int) -> None:
        model = spec.model
        self.db.execute(
            self.INSERT_VERSION,
            (
                *self._key,
                agent_id,
                version,
                well_formed_text(spec.name),
                well_formed_text(spec.instructions),
                model.endpoint if model else None,
                model.model if model else None,
                spec.temperature,
                spec.max_output_tokens,
                json.dumps(list(spec.tools)),
                json.dumps([well_formed_text(p) for p in spec.starter_prompts]),
                now,
            ),
        )

    def load(self, agent_id: str, version: int | None) -> AgentVersion | None:
        if version is None:
            row = self.db.query_one(self.SELECT_LATEST, (*self._key, agent_id))
        else:
            row = self.db.query_one(self.SELECT_VERSION, (*self._key, agent_id, version))
        return _version(row) if row else None

    def list_live(self) -> list[AgentSummary]:
        return [
            AgentSummary(row["id"], row["name"], row["latest_version"], row["updated_at"])
            for row in self.db.query(self.LIST_LIVE, self._key)
        ]

    def versions(self, agent_id: str, before: int, limit: int) -> list[VersionInfo]:
        rows = self.db.query(self.PAGE_VERSIONS, (*self._key, agent_id, before, limit))
        return [VersionInfo(row["version"], row["name"], row["created_at"]) for row in rows]

    def mark_deleted(self, agent_id: str, now: int) -> bool:
        return self.db.write(self.DELETE_AGENT, (*self._key, now, agent_id)) == 1

    def versions_saved(self) -> int:
        row = self.db.query_one(self.VERSIONS_SAVED, self._key)
        return int(row[0]) if row is not None else 0

    def default_agent(self) -> str | None:
        row = self.db.query_one(self.GET_SETTING, (*self._key, DEFAULT_AGENT_KEY))
        return str(row[0]) if row else None

    def set_default_agent(self, agent_id: str | None) -> None:
        if agent_id is None:
            self.db.write(self.DROP_SETTING, (*self._key, DEFAULT_AGENT_KEY))
        else:
            self.db.write(self.PUT_SETTING, (*self._key, DEFAULT_AGENT_KEY, agent_id))


def _version(row: Row) -> AgentVersion:
    endpoint, model = row["model_endpoint"], row["model_name"]
    spec = AgentSpec(
        name=row["name"],
        instructions=row["instructions"],
        model=ModelRef(endpoint, model) if endpoint and model else None,
        temperature=row["temperature"],
        max_output_tokens=row["max_output_tokens"],
        tools=tuple(json.loads(row["tools"])),
        starter_prompts=tuple(json.loads(row["starter_prompts"])),
    )
    return AgentVersion(row["agent_id"], row["version"], spec, row["created_at"])
