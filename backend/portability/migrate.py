"""``chats migrate``: everything a data folder holds, moved to PostgreSQL and back.

Run with the app stopped. The copy goes unit by unit (:mod:`backend.portability.migrate_sides`:
what SQLite keeps in one file), each unit by the packages that own its tables (their
``migration`` modules: source-of-truth rows copied as they are, search indexes left for the
target's own code to build). The orchestration here owns only the order, the journal and the
report:

* **Order**: the server units (accounts, settings, sharing), then person by person their
  directory (chat index, agents, projects) and each of their chats.
* **Resumable**: each finished unit is journaled in the target
  (:mod:`backend.portability.migrate_journal`) after its copy commits; a rerun skips
  journaled units and copies any other again from nothing.
* **Idempotent**: a run that finds its journal complete changes nothing and says so.
* **Refusals**: a target that holds data but no journal of this source, a journal of another
  source, or both ends on one engine (a copy within an engine is ``chats backup``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from backend.accounts import migration as accounts_migration
from backend.agents import migration as agents_migration
from backend.chats import migration as chats_migration
from backend.data_folder import CHATS_FOLDER, DIRECTORY_FILE
from backend.endpoints import migration as endpoints_migration
from backend.errors import InvalidInputError
from backend.portability.migrate_journal import Journal
from backend.portability.migrate_sides import Side, Unit
from backend.projects import migration as projects_migration
from backend.runtime import migration as runtime_migration
from backend.sessions import migration as sessions_migration
from backend.sharing import migration as sharing_migration
from backend.storage import Scope
from backend.storage.migration import Copied

CopyStep = Callable[[Scope, Scope], Copied]
SERVER_UNITS: tuple[tuple[Unit, CopyStep], ...] = (
    (Unit.server(accounts_migration.SCOPE), accounts_migration.copy_accounts),
    (Unit.server(endpoints_migration.SETTINGS_SCOPE), endpoints_migration.copy_settings),
    (Unit.server(sharing_migration.SCOPE), sharing_migration.copy_sharing),
)


class MigrationRefused(InvalidInputError):
    """The target cannot take this migration (it holds other data, or another's journal)."""


@dataclass(frozen=True, slots=True)
class UnitCopied:
    """A unit's copy committed (announced before it is journaled)."""

    unit: Unit
    copied: Copied
    seconds: float

    @property
    def messages(self) -> int:
        return self.copied.count(sessions_migration.MESSAGES)


@dataclass(frozen=True, slots=True)
class PersonStarted:
    """A person's directory is next: ``index`` of ``total`` people, with ``chats`` chats."""

    directory_id: str
    index: int
    total: int
    chats: int


@dataclass(frozen=True, slots=True)
class UnitSkipped:
    """A unit an earlier run finished (journaled): not copied again."""

    unit: Unit


MigrationEvent = UnitCopied | PersonStarted | UnitSkipped
Listener = Callable[[MigrationEvent], None]


@dataclass(slots=True)
class MigrationReport:
    """What one run did (a rerun counts only what it copied itself)."""

    source: str
    target: str
    people: int = 0
    chats: int = 0
    messages: int = 0
    attachments: int = 0
    rows: int = 0
    bytes: int = 0
    seconds: float = 0.0
    units_copied: int = 0
    units_already_finished: int = 0
    already_complete: bool = False
    per_table: dict[str, int] = field(default_factory=dict)

    def add(self, copied: Copied) -> None:
        self.rows += copied.rows
        self.bytes += copied.bytes
        self.messages += copied.count(sessions_migration.MESSAGES)
        self.attachments += copied.count(sessions_migration.ATTACHMENTS)
        self.attachments += copied.count(chats_migration.POOL)
        for name, count in copied.per_table.items():
            self.per_table[name] = self.per_table.get(name, 0) + count


def chat_unit(directory_id: str, chat_id: str, generation: int) -> Unit:
    return Unit(str(PurePosixPath(directory_id, CHATS_FOLDER, f"{chat_id}.g{generation}.sqlite")))


def directory_unit(directory_id: str) -> Unit:
    return Unit(str(PurePosixPath(directory_id, DIRECTORY_FILE)))


class _Run:
    """One run: the two sides, the journal, the report, the listener."""

    def __init__(self, source: Side, target: Side, journal: Journal, listener: Listener) -> None:
        self.source, self.target, self.journal, self.listener = source, target, journal, listener
        self.report = MigrationReport(source.describe(), target.describe())

    def copy(self, unit: Unit, source: Scope, steps: tuple[CopyStep, ...]) -> bool:
        """Copy ``unit`` unless journaled; whether it was copied now."""
        if unit.name in self.journal.finished:
            self.report.units_already_finished += 1
            self.listener(UnitSkipped(unit))
            return False
        started = time.perf_counter()
        self.target.discard(unit)
        target = self.target.open(unit)
        copied = Copied()
        try:
            for step in steps:
                copied.add(step(source, target))
        finally:
            target.close()
        self.report.add(copied)
        self.report.units_copied += 1
        self.listener(UnitCopied(unit, copied, time.perf_counter() - started))
        self.journal.finish(unit.name)
        return True

    def server(self) -> None:
        for unit, step in SERVER_UNITS:
            if not self.source.has(unit):
                continue
            source = self.source.open(unit)
            try:
                self.copy(unit, source, (step,))
            finally:
                source.close()

    def person(self, directory_id: str, index: int, total: int) -> None:
        unit = directory_unit(directory_id)
        source = self.source.open(unit)
        try:
            generations = chats_migration.stored_generations(
                source, self.source.layout(directory_id)
            )
            self.listener(PersonStarted(directory_id, index, total, len(generations)))
            layout = self.target.layout(directory_id)

            def directory(src: Scope, dst: Scope) -> Copied:
                return chats_migration.copy_directory(src, dst, layout, generations)

            steps = (directory, agents_migration.copy_agents, projects_migration.copy_projects)
            if self.copy(unit, source, steps):
                self.report.people += 1
        finally:
            source.close()
        for chat_id, generation in generations:
            self.chat(chat_unit(directory_id, chat_id, generation))

    def chat(self, unit: Unit) -> None:
        source = self.source.open(unit)
        try:
            steps = (sessions_migration.copy_conversation, runtime_migration.copy_runtime)
            if self.copy(unit, source, steps):
                self.report.chats += 1
        finally:
            source.close()


def _ignore(event: MigrationEvent) -> None:
    """No listener: a library caller that wants no progress."""


def migrate(source: Side, target: Side, *, listener: Listener | None = None) -> MigrationReport:
    """Copy everything ``source`` holds into ``target`` (see the module docstring).

    Raises :class:`MigrationRefused` before writing anything when the target cannot take it.
    """
    started = time.perf_counter()
    if source.kind == target.kind:
        raise MigrationRefused(
            f"both ends are {source.kind}: migrate moves between SQLite and PostgreSQL "
            "(a copy within one engine is `chats backup` then `chats restore`)"
        )
    if not target.has_journal() and target.holds_data():
        raise MigrationRefused(
            f"{target.describe()} already holds data: migrate only into an empty target"
        )
    journal = Journal(target.open_journal())
    try:
        described = source.describe()
        if journal.started and journal.source != described:
            raise MigrationRefused(
                f"{target.describe()} holds a migration from {journal.source}, not from {described}"
            )
        run = _Run(source, target, journal, listener or _ignore)
        if journal.complete:
            run.report.already_complete = True
        else:
            journal.begin(described)
            run.server()
            people = source.directory_ids()
            for index, directory_id in enumerate(people, start=1):
                run.person(directory_id, index, len(people))
            journal.finish_all()
        run.report.seconds = time.perf_counter() - started
        return run.report
    finally:
        journal.close()
