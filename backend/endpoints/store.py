"""``<data_dir>/settings.sqlite``: the endpoints an admin added, and every SQL statement on them.

Why a file of its own and not a table in ``accounts.sqlite``: the accounts package owns that
file and its migrations; server-wide settings are a different concern with a different
owner, and a separate file keeps each package's tables its own. Same conventions as accounts:
:class:`backend.storage.Database` (WAL, busy timeout, ``BEGIN IMMEDIATE``), append-only
named migrations (component ``endpoints``).

Table::

    model_endpoints(name PK, base_url, api_key, models JSON, created_at, updated_at)  WITHOUT ROWID

The key is stored as given: the server must send it, so it cannot be hashed. Protect the data
folder as you protect the environment that holds ``CHATS_MODEL_API_KEY``. It never leaves the
server: no value this package hands out carries it.

Callers (:mod:`backend.endpoints.service`) own transactions. The PostgreSQL twin
(:mod:`backend.endpoints.pg_store`) differs in its schema only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from backend.endpoints.endpoint import Endpoint
from backend.storage import Row, Scope

COMPONENT = "endpoints"
SETTINGS_SCOPE = "settings"  # the scope's name on either engine; on SQLite, SETTINGS_FILE


def _m001_model_endpoints(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE model_endpoints (
            name TEXT PRIMARY KEY,
            base_url TEXT NOT NULL,
            api_key TEXT NOT NULL DEFAULT '',
            models TEXT NOT NULL DEFAULT '[]',
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) WITHOUT ROWID
        """
    )


MIGRATIONS = (_m001_model_endpoints,)

_SELECT_ALL = "SELECT * FROM model_endpoints ORDER BY name"
_SELECT_ONE = "SELECT * FROM model_endpoints WHERE name = ?"
_UPSERT = """
INSERT INTO model_endpoints (name, base_url, api_key, models, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (name) DO UPDATE SET base_url = excluded.base_url, api_key = excluded.api_key,
    models = excluded.models, updated_at = excluded.updated_at
"""
_DELETE = "DELETE FROM model_endpoints WHERE name = ?"


class EndpointStore:
    """SQL of ``model_endpoints``."""

    migrations: Sequence[Callable[[Any], None]] = MIGRATIONS

    def __init__(self, db: Scope) -> None:
        self.db = db
        db.migrate(COMPONENT, self.migrations)

    def list(self) -> list[Endpoint]:
        return [_endpoint(row) for row in self.db.query(_SELECT_ALL)]

    def load(self, name: str) -> Endpoint | None:
        row = self.db.query_one(_SELECT_ONE, (name,))
        return _endpoint(row) if row else None

    def save(self, endpoint: Endpoint, now: int) -> None:
        models = json.dumps(list(endpoint.models))
        self.db.execute(
            _UPSERT, (endpoint.name, endpoint.base_url, endpoint.api_key, models, now, now)
        )

    def delete(self, name: str) -> bool:
        return self.db.write(_DELETE, (name,)) == 1


def _endpoint(row: Row) -> Endpoint:
    return Endpoint(
        name=row["name"],
        base_url=row["base_url"],
        api_key=row["api_key"],
        models=tuple(json.loads(row["models"])),
        source="admin",
    )
