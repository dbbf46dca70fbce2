"""SQLite plumbing shared by every store: one connection wrapper and its migrations."""

from backend.storage.database import Database, Migration, OpStats

__all__ = ["Database", "Migration", "OpStats"]
