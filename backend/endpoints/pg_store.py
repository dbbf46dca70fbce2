"""The endpoints table on PostgreSQL: the twin of :mod:`backend.endpoints.store`.

Its statements read the same on both engines and are inherited; the schema differs: ``bigint``
milliseconds, and names (the order endpoints are listed in) in ``COLLATE "C"``, byte order as
on SQLite whatever the database's own collation is.
"""

from __future__ import annotations

from backend.endpoints.store import EndpointStore
from backend.storage import Scope


def _m001_model_endpoints(db: Scope) -> None:
    db.execute(
        """
        CREATE TABLE model_endpoints (
            name text COLLATE "C" PRIMARY KEY,
            base_url text NOT NULL,
            api_key text NOT NULL DEFAULT '',
            models text NOT NULL DEFAULT '[]',
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL
        )
        """
    )


class PgEndpointStore(EndpointStore):
    """``model_endpoints`` on a PostgreSQL scope."""

    migrations = (_m001_model_endpoints,)
