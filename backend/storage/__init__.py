"""Plumbing shared by every store: the engine-neutral :class:`Scope` contract, the SQLite
``Database`` (one connection per file, its migrations), the PostgreSQL engine
(``backend.storage.postgres``, picked by ``backend.storage.engines`` from ``CHATS_STORAGE``),
and the rule for text bound into TEXT columns and search indexes (``backend.storage.text``)."""

from backend.storage.commit_counters import commit_counters
from backend.storage.database import MAX_INTEGER, Database, Migration, OpStats
from backend.storage.scope import IntegrityError, Row, Scope
from backend.storage.text import join_text, live_text, well_formed_text

__all__ = [
    "MAX_INTEGER",
    "Database",
    "IntegrityError",
    "Migration",
    "OpStats",
    "Row",
    "Scope",
    "commit_counters",
    "join_text",
    "live_text",
    "well_formed_text",
]
