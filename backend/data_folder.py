"""The files of a data folder (``CHATS_DATA_DIR``): every name in one list.

Each package that writes into the folder takes its file's name from here, and backup and
restore walk :data:`DATA_FILES`, so a database added to the app without a line here is a
database no backup holds: ``tests/portability/test_data_folder.py`` fills a folder with
everything the app writes and fails on a file this list does not name. SQLite's ``-wal``,
``-shm`` and ``-journal`` side files belong to their database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

ACCOUNTS_FILE = "accounts.sqlite"
SETTINGS_FILE = "settings.sqlite"
SHARING_FILE = "sharing.sqlite"
SETUP_CODE_FILE = "setup-code.txt"
MIGRATION_JOURNAL_FILE = "migration.sqlite"
DIRECTORY_FILE = "directory.sqlite"
CHATS_FOLDER = "chats"
SIDE_SUFFIXES = ("-wal", "-shm", "-journal")

_ID = r"[A-Za-z0-9][^/]*"  # one name, never "." or "..": ids are validated by their packages


@dataclass(frozen=True, slots=True)
class DataFile:
    """One kind of file in a data folder."""

    kind: str
    path: str  # relative to the data folder; <directory>, <chat>, <generation> stand for ids
    backed_up: bool
    why: str  # what it holds, or why a backup leaves it out

    @property
    def fixed(self) -> bool:
        """Whether ``path`` is one file's name (not a pattern over ids)."""
        return "<" not in self.path

    def matches(self, relative: str) -> bool:
        return _pattern(self.path).fullmatch(relative) is not None


@cache
def _pattern(path: str) -> re.Pattern[str]:
    """``path`` as a regular expression: each placeholder stands for one name (never "..")."""
    parts = re.split(r"(<[a-z]+>)", path)
    return re.compile("".join(_ID if p.startswith("<") else re.escape(p) for p in parts))


DATA_FILES: tuple[DataFile, ...] = (
    DataFile(
        "accounts",
        ACCOUNTS_FILE,
        True,
        "accounts, hashed sign-in tokens, throttle counters, invites, the account feed",
    ),
    DataFile(
        "settings",
        SETTINGS_FILE,
        True,
        "model endpoints and their keys, added by an admin",
    ),
    DataFile(
        "sharing",
        SHARING_FILE,
        True,
        "who each shared chat is shared with and as what, the membership feed, share links "
        "(hashed tokens) and their snapshots",
    ),
    DataFile(
        "setup code",
        SETUP_CODE_FILE,
        False,
        "a plain one-time code: only its hash is kept (in accounts), and a start that finds "
        "no file while setup is pending writes a new one",
    ),
    DataFile(
        "migration journal",
        MIGRATION_JOURNAL_FILE,
        False,
        "which parts a `chats migrate` into this folder finished: a killed run resumes, a "
        "second run changes nothing; what it copied is in the other files",
    ),
    DataFile(
        "directory",
        f"<directory>/{DIRECTORY_FILE}",
        True,
        "a person's chat index, shared memory, message index, attachment pool, agents",
    ),
    DataFile(
        "chat",
        f"<directory>/{CHATS_FOLDER}/<chat>.g<generation>.sqlite",
        True,
        "one conversation: messages, attachments, runs, session state",
    ),
)

SERVER_DATABASES: tuple[str, ...] = tuple(f.path for f in DATA_FILES if f.fixed and f.backed_up)
"""The databases at the top of the folder, in backup order (directories come after)."""


def data_file(relative: str | PurePosixPath) -> DataFile | None:
    """The kind of file at ``relative`` (a side file counts as its database), or None."""
    name = str(PurePosixPath(relative))
    for suffix in SIDE_SUFFIXES:
        name = name.removesuffix(suffix)
    return next((kind for kind in DATA_FILES if kind.matches(name)), None)


def is_backed_up(relative: str | PurePosixPath) -> bool:
    """Whether ``relative`` is a database a backup holds (and so one a restore may write)."""
    kind = data_file(relative)
    return kind is not None and kind.backed_up and not str(relative).endswith(SIDE_SUFFIXES)


def directory_ids(data_dir: Path) -> list[str]:
    """The folders of ``data_dir`` that hold a directory database, sorted (none if it is
    missing): every person's directory the folder keeps."""
    if not data_dir.is_dir():
        return []
    return sorted(p.name for p in data_dir.iterdir() if (p / DIRECTORY_FILE).is_file())
