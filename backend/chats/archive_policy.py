"""The "archive chats untouched for N days" policy: the user's setting and one pass of it.

The setting is per directory (one user's), kept in ``directory_meta``; unset means off, the
default. A pass archives every listed chat neither updated (a reply, an import's times) nor
taken out of the archive within the last N days. It archives through the lifecycle's one
``archive`` writer, so each chat it moves is announced like one archived by hand, and every
tab of the user sees it leave the main list.

When passes run is the host's choice: ``Chats`` runs one when the directory opens (so at
sign-in) and when the setting changes; the app runs one periodically for the directories it
has open. A pass with nothing due costs one indexed range read.
"""

from __future__ import annotations

from collections.abc import Callable

from backend.chats.chat_records import ChatRecordStore
from backend.chats.values import ChatSummary
from backend.errors import ChatNotFoundError, InvalidInputError
from backend.storage import Scope

AUTO_ARCHIVE_KEY = "auto_archive_days"
MIN_AUTO_ARCHIVE_DAYS = 1
MAX_AUTO_ARCHIVE_DAYS = 3650
DAY_MS = 86_400_000
ARCHIVE_BATCH = 100
"""Chats archived per transaction of a pass (short, so other writers wait little)."""


def check_days(days: object) -> int | None:
    """``None`` (off) or a whole number of days in range; anything else: ``InvalidInputError``."""
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int):
        raise InvalidInputError("the archive policy takes a whole number of days")
    if not MIN_AUTO_ARCHIVE_DAYS <= days <= MAX_AUTO_ARCHIVE_DAYS:
        raise InvalidInputError(
            f"archive after between {MIN_AUTO_ARCHIVE_DAYS} and {MAX_AUTO_ARCHIVE_DAYS} days"
        )
    return days


class AutoArchive:
    """Reads and writes the policy's setting, and runs passes of it."""

    def __init__(
        self,
        database: Scope,
        records: ChatRecordStore,
        archive: Callable[[str, int], ChatSummary],
    ) -> None:
        self._database = database
        self._records = records
        self._archive = archive

    def days(self) -> int | None:
        """The setting; a value this version cannot read counts as off (reads degrade)."""
        raw = self._records.load_setting(AUTO_ARCHIVE_KEY)
        if raw is None:
            return None
        try:
            return check_days(int(raw))
        except ValueError:
            return None

    def set_days(self, days: int | None) -> None:
        checked = check_days(days)
        with self._database.transaction():
            self._records.put_setting(AUTO_ARCHIVE_KEY, None if checked is None else str(checked))

    def run(self, now: int) -> list[str]:
        """Archive what is due at ``now``; the ids archived, newest first."""
        days = self.days()
        if days is None:
            return []
        cutoff = now - days * DAY_MS
        archived: list[str] = []
        while batch := self._records.untouched_since(cutoff, ARCHIVE_BATCH):
            moved = 0
            # One commit per batch (each archive joins it), not one per chat: the first pass
            # after turning the policy on may archive thousands.
            with self._database.transaction():
                for record in batch:
                    try:
                        self._archive(record.id, now)
                    except ChatNotFoundError:
                        continue  # deleted since the read: nothing to archive
                    archived.append(record.id)
                    moved += 1
            if len(batch) < ARCHIVE_BATCH or moved == 0:
                break
        return archived
