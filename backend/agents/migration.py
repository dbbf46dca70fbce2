"""The agent library's tables for ``chats migrate``: every version of every agent (deleted
ones too: chats bound to them still run) and the person's default, copied row for row."""

from __future__ import annotations

from backend.agents.store import AgentStore
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, copy_scope

__all__ = ["TABLES", "copy_agents"]

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        "agents", ("id", "latest_version", "created_at", "updated_at", "deleted_at"), ("id",)
    ),
    CopiedTable(
        "agent_versions",
        (
            "agent_id",
            "version",
            "name",
            "instructions",
            "model_endpoint",
            "model_name",
            "temperature",
            "max_output_tokens",
            "tools",
            "starter_prompts",
            "created_at",
        ),
        ("agent_id", "version"),
    ),
    CopiedTable("agent_settings", ("key", "value"), ("key",)),
)


def _prepare(target: Scope) -> object:
    if target.engine_kind == "postgresql":
        from backend.agents.pg_store import PgAgentStore  # psycopg loads on PostgreSQL only

        return PgAgentStore(target)  # type: ignore[arg-type]
    return AgentStore(target)


def copy_agents(source: Scope, target: Scope) -> Copied:
    """The agent library of the directory ``source`` into the directory ``target``."""
    return copy_scope(source, target, TABLES, prepare=_prepare)
