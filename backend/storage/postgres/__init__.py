"""The PostgreSQL storage engine: a pool per database (:class:`PostgresEngine`) and scopes on it
(:class:`PostgresScope`) that keep :class:`backend.storage.scope.Scope`'s promises."""

from backend.storage.postgres.engine import PostgresEngine
from backend.storage.postgres.errors import (
    MIN_SERVER_VERSION,
    CommitAbortedError,
    CommitOutcomeError,
    CommitOutcomeUnknownError,
    CommittedReplyLostError,
    StorageUnavailableError,
    UnsupportedServerError,
)
from backend.storage.postgres.outcome import GUARDED_BUMP
from backend.storage.postgres.rows import PgRow
from backend.storage.postgres.scope import PostgresScope

__all__ = [
    "GUARDED_BUMP",
    "MIN_SERVER_VERSION",
    "CommitAbortedError",
    "CommitOutcomeError",
    "CommitOutcomeUnknownError",
    "CommittedReplyLostError",
    "PgRow",
    "PostgresEngine",
    "PostgresScope",
    "StorageUnavailableError",
    "UnsupportedServerError",
]
