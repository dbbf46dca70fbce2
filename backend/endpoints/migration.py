"""The settings tables for ``chats migrate``: the admin's model endpoints, keys as stored."""

from __future__ import annotations

from backend.endpoints.pg_store import PgEndpointStore
from backend.endpoints.store import SETTINGS_SCOPE, EndpointStore
from backend.storage import Scope
from backend.storage.migration import Copied, CopiedTable, copy_scope, table_exists

__all__ = ["SETTINGS_SCOPE", "TABLES", "copy_settings", "holds_settings"]

TABLES: tuple[CopiedTable, ...] = (
    CopiedTable(
        "model_endpoints",
        ("name", "base_url", "api_key", "models", "created_at", "updated_at"),
        ("name",),
        per_scope=False,
    ),
)


def _prepare(target: Scope) -> object:
    store = PgEndpointStore if target.engine_kind == "postgresql" else EndpointStore
    return store(target)


def copy_settings(source: Scope, target: Scope) -> Copied:
    return copy_scope(source, target, TABLES, prepare=_prepare)


def holds_settings(scope: Scope) -> bool:
    return (
        table_exists(scope, "model_endpoints")
        and scope.query_one("SELECT 1 FROM model_endpoints LIMIT 1") is not None
    )
