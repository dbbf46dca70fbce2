"""What an import did, conversation by conversation: the CLI prints it, the UI shows it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Failure:
    item: str
    reason: str


@dataclass(slots=True)
class ImportReport:
    """Counts by outcome (``imported`` new chats, ``updated`` ones that gained messages,
    ``unchanged`` re-imports that wrote nothing) and each failure with its reason."""

    format: str = ""
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    messages: int = 0
    failures: list[Failure] = field(default_factory=list)
    chat_ids: list[str] = field(default_factory=list)
    projects: Counter[str] = field(default_factory=Counter)
    """Projects by outcome: ``new``, ``updated``, ``unchanged`` (a zip of this app)."""

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        text = (
            f"{self.format}: {self.imported} imported, {self.updated} updated, "
            f"{self.unchanged} unchanged, {len(self.failures)} failed "
            f"({self.messages} messages written)"
        )
        if self.projects:
            text += (
                f"; projects: {self.projects['new']} imported, {self.projects['updated']} "
                f"updated, {self.projects['unchanged']} unchanged"
            )
        return text
