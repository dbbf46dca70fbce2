"""SQLite plumbing shared by every store: one connection wrapper, its migrations, and the rule
for text bound into TEXT columns and FTS tables (``backend.storage.text``)."""

from backend.storage.database import MAX_INTEGER, Database, Migration, OpStats
from backend.storage.text import join_text, live_text, well_formed_text

__all__ = [
    "MAX_INTEGER",
    "Database",
    "Migration",
    "OpStats",
    "join_text",
    "live_text",
    "well_formed_text",
]
