"""The runtime's tables of one chat for ``chats migrate``: its conversation record, session
state and run records, copied row for row between engines.

A run's ``seq`` is copied as it is: it orders a chat's runs. On PostgreSQL the column is an
identity shared by every chat, moved past the largest copied number afterwards.
"""

from __future__ import annotations

from backend.runtime.pg_store import runtime_store_for
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, copy_scope

__all__ = ["TABLES", "copy_runtime"]

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        "runtime_conversation",
        (
            "id",
            "tenant_id",
            "owner_principal_id",
            "participant_ids",
            "agent_id",
            "agent_version_policy",
            "agent_version",
            "session_state_version",
            "title",
            "last_run_id",
            "archived_at",
            "created_at",
            "updated_at",
            "fence",
            "model_endpoint",
            "model_name",
        ),
        ("id",),
    ),
    CopiedTable(
        "runtime_session_state",
        ("conversation_id", "state", "bytes", "updated_at"),
        ("conversation_id",),
    ),
    CopiedTable(
        "runtime_runs",
        (
            "seq",
            "id",
            "conversation_id",
            "kind",
            "status",
            "user_message_id",
            "assistant_message_id",
            "agent_id",
            "agent_version",
            "enqueued_at",
            "started_at",
            "finished_at",
            "error",
            "claimed_by",
            "fence",
            "model_endpoint",
            "model_name",
            "requested_by_id",
            "requested_by_name",
        ),
        ("seq",),
        identity="seq",
    ),
)


def copy_runtime(source: Scope, target: Scope) -> Copied:
    """The runtime's rows of the chat ``source`` into the chat ``target``."""
    return copy_scope(source, target, TABLES, prepare=runtime_store_for)
