"""The two ends of ``chats migrate``: a SQLite data folder, or a PostgreSQL database.

A migration copies **units**, each what SQLite keeps in one file: the server files
(``accounts.sqlite``, ``settings.sqlite``, ``sharing.sqlite``), then per person
``<id>/directory.sqlite`` and each ``<id>/chats/<chat>.g<generation>.sqlite``. A unit is named
by that relative path on both engines (the journal's key). On PostgreSQL a server unit is the
scope its service names (``accounts``...), and any other the scope named by the absolute path
of the file under the logical ``root`` (``docs/architecture.md`` "Storage engines").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from backend.accounts import migration as accounts_migration
from backend.chats import migration as chats_migration
from backend.chats.layout import DirectoryLayout
from backend.config import PostgresLocation
from backend.data_folder import MIGRATION_JOURNAL_FILE as JOURNAL_FILE
from backend.data_folder import SIDE_SUFFIXES, data_file, directory_ids
from backend.endpoints import migration as endpoints_migration
from backend.sharing import migration as sharing_migration
from backend.storage import Database, Scope
from backend.storage.engines import EngineKind, PostgresStorage
from backend.storage.migration import table_exists

JOURNAL_SCOPE = "migration"
"""The journal's scope on PostgreSQL."""
JOURNAL_TABLE = "migration_journal"


@dataclass(frozen=True, slots=True)
class Unit:
    """What SQLite keeps in one file: ``name`` is that file's path in the data folder."""

    name: str
    server_scope: str | None = None  # the service's scope on PostgreSQL (server files)

    @classmethod
    def server(cls, scope: str) -> Unit:
        return cls(f"{scope}.sqlite", scope)


class Side(Protocol):
    """One end of a migration: where units are opened, found and discarded."""

    kind: EngineKind

    def describe(self) -> str: ...

    def open(self, unit: Unit) -> Scope: ...

    def has(self, unit: Unit) -> bool: ...

    def discard(self, unit: Unit) -> None: ...

    def directory_ids(self) -> list[str]: ...

    def layout(self, directory_id: str) -> DirectoryLayout: ...

    def holds_data(self) -> bool: ...

    def has_journal(self) -> bool: ...

    def open_journal(self) -> Scope: ...

    def close(self) -> None: ...


class SqliteSide:
    """A data folder: every unit is its file."""

    kind: EngineKind = "sqlite"

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(os.path.abspath(data_dir))

    def describe(self) -> str:
        return f"the data folder {self.data_dir}"

    def path(self, unit: Unit) -> Path:
        return self.data_dir / unit.name

    def open(self, unit: Unit) -> Scope:
        path = self.path(unit)
        path.parent.mkdir(parents=True, exist_ok=True)
        return Database(path)

    def has(self, unit: Unit) -> bool:
        return self.path(unit).is_file()

    def discard(self, unit: Unit) -> None:
        """Remove what a killed run left of ``unit``: it is copied again from nothing."""
        path = self.path(unit)
        for suffix in ("", *SIDE_SUFFIXES):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{path}{suffix}").unlink()

    def directory_ids(self) -> list[str]:
        return directory_ids(self.data_dir)

    def layout(self, directory_id: str) -> DirectoryLayout:
        return DirectoryLayout(self.data_dir, directory_id)

    def holds_data(self) -> bool:
        """Whether the folder holds any database the app keeps (its files, by name)."""
        if not self.data_dir.is_dir():
            return False
        for path in self.data_dir.rglob("*"):
            kind = data_file(path.relative_to(self.data_dir).as_posix())
            if kind is not None and kind.backed_up and path.is_file():
                return True
        return False

    def has_journal(self) -> bool:
        return (self.data_dir / JOURNAL_FILE).is_file()

    def open_journal(self) -> Scope:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return Database(self.data_dir / JOURNAL_FILE)

    def close(self) -> None:
        """Nothing held: each unit's database is closed by whoever opened it."""


class PostgresSide:
    """A PostgreSQL database: units are scopes, the per-person ones named under ``root``."""

    kind: EngineKind = "postgresql"
    # Whether a server scope holds anything, by scope name.
    _HOLDS: ClassVar[dict[str, Callable[[Scope], bool]]] = {
        accounts_migration.SCOPE: accounts_migration.holds_accounts,
        endpoints_migration.SETTINGS_SCOPE: endpoints_migration.holds_settings,
        sharing_migration.SCOPE: sharing_migration.holds_sharing,
    }

    def __init__(self, location: PostgresLocation, root: Path) -> None:
        self.location = location
        self.root = os.path.abspath(root)
        self._storage = PostgresStorage(location)

    def describe(self) -> str:
        """Names the server, never the password."""
        return f"{self.location.describe()} (scopes under {self.root})"

    def scope_name(self, unit: Unit) -> str:
        return unit.server_scope or os.path.join(self.root, unit.name)

    def open(self, unit: Unit) -> Scope:
        return self._storage.open_scope(self.scope_name(unit))

    def has(self, unit: Unit) -> bool:
        """A server scope exists when it holds rows (a folder without ``accounts.sqlite``
        migrated here and back must not come back with an empty one: the CLI would then
        look ``--user`` up in it); every directory the enumeration names exists."""
        holds = self._HOLDS.get(unit.server_scope or "")
        if holds is None:
            return True
        with contextlib.closing(self._storage.open_scope(self.scope_name(unit))) as scope:
            return holds(scope)

    def discard(self, unit: Unit) -> None:
        """Nothing to remove: each package's copy clears the unit's rows first, in the
        transaction that writes them."""

    def directory_ids(self) -> list[str]:
        with contextlib.closing(self._storage.open_scope(JOURNAL_SCOPE)) as probe:
            return chats_migration.directories_under(probe, self.root)

    def layout(self, directory_id: str) -> DirectoryLayout:
        return DirectoryLayout(self.root, directory_id, on_disk=False)

    def holds_data(self) -> bool:
        """Whether the database holds any account, setting, share or directory at all
        (under any root: a database shared with another installation is refused too)."""
        checks = (*self._HOLDS.items(), (JOURNAL_SCOPE, chats_migration.holds_directories))
        for name, holds in checks:
            with contextlib.closing(self._storage.open_scope(name)) as scope:
                if holds(scope):
                    return True
        return False

    def has_journal(self) -> bool:
        with contextlib.closing(self._storage.open_scope(JOURNAL_SCOPE)) as probe:
            return table_exists(probe, JOURNAL_TABLE)

    def open_journal(self) -> Scope:
        return self._storage.open_scope(JOURNAL_SCOPE)

    def close(self) -> None:
        self._storage.close()
