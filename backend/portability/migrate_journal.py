"""The journal of a migration, kept in its target: which units are finished.

A unit is journaled after its copy committed, so a run killed at any point finds every
journaled unit whole; a unit not journaled is discarded and copied again from nothing (each
package's copy clears the unit's rows first). The journal also names the source, so a rerun
resumes only the same migration, and says when the whole run finished, so a second run
changes nothing and says so.

    migration_journal (unit PK, finished_at, detail)
        "(source)"    detail: the source, described without any password
        "(complete)"  the run finished every unit
        <unit>        one finished unit
"""

from __future__ import annotations

from backend.clock import now_ms
from backend.storage import Scope

COMPONENT = "portability.migration"
SOURCE_ROW = "(source)"
COMPLETE_ROW = "(complete)"


def _m001_journal(db: Scope) -> None:
    db.execute(
        "CREATE TABLE migration_journal (unit TEXT PRIMARY KEY, finished_at BIGINT NOT NULL, "
        "detail TEXT NOT NULL DEFAULT '')"
    )


MIGRATIONS = (_m001_journal,)
_SELECT = "SELECT unit, detail FROM migration_journal"
_PUT = (
    "INSERT INTO migration_journal (unit, finished_at, detail) VALUES (?, ?, ?) "
    "ON CONFLICT (unit) DO UPDATE SET finished_at = excluded.finished_at, detail = excluded.detail"
)


class Journal:
    """The journal on ``scope`` (the target's: a file of the folder, or a PostgreSQL scope)."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        scope.migrate(COMPONENT, MIGRATIONS)
        rows = {str(row[0]): str(row[1]) for row in scope.query(_SELECT)}
        self.source: str | None = rows.pop(SOURCE_ROW, None)
        self.complete = rows.pop(COMPLETE_ROW, None) is not None
        self.finished: set[str] = set(rows)

    @property
    def started(self) -> bool:
        return self.source is not None

    def begin(self, source: str) -> None:
        self._put(SOURCE_ROW, source)
        self.source = source

    def finish(self, unit: str) -> None:
        self._put(unit, "")
        self.finished.add(unit)

    def finish_all(self) -> None:
        self._put(COMPLETE_ROW, "")
        self.complete = True

    def _put(self, unit: str, detail: str) -> None:
        with self.scope.transaction():
            self.scope.execute(_PUT, (unit, now_ms(), detail))

    def close(self) -> None:
        self.scope.close()
