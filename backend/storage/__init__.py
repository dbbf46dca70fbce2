"""SQLite plumbing shared by every store: one connection wrapper and its migrations."""

from backend.storage.database import MAX_INTEGER, Database, Migration, OpStats

__all__ = ["MAX_INTEGER", "Database", "Migration", "OpStats"]
