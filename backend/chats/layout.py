"""Where a directory's files live, so a person can read, copy and back them up.

::

    <root>/
      <directory_id>/
        directory.sqlite            the chat index, title search, shared memory, message index
        chats/
          <chat_id>.g<generation>.sqlite   one conversation (a backend.sessions database)

Each chat file carries its **generation**: re-creating a deleted id starts a new file, so a
stale writer still holding the previous generation's connection can never write into the new
conversation. SQLite's ``-wal`` / ``-shm`` side files sit next to each database and belong
to it (purging a chat removes them too).

Paths are only ever built from ids that :mod:`backend.chats.ids` validated; as a second line
of defence every chat path is checked to resolve inside ``chats/``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from backend.chats.ids import validate_directory_id
from backend.data_folder import CHATS_FOLDER, DIRECTORY_FILE, SIDE_SUFFIXES
from backend.errors import InvalidIdError

_SIDE_SUFFIXES = ("", *SIDE_SUFFIXES)


class DirectoryLayout:
    """The paths of one directory under ``root``."""

    def __init__(self, root: str | Path, directory_id: str) -> None:
        self.directory_id = validate_directory_id(directory_id)
        self.root = Path(root)
        self.folder = self.root / self.directory_id
        self.database_path = self.folder / DIRECTORY_FILE
        self.chats_folder = self.folder / CHATS_FOLDER

    def ensure_folders(self) -> None:
        self.chats_folder.mkdir(parents=True, exist_ok=True)

    def chat_path(self, chat_id: str, generation: int) -> Path:
        """The database file of one chat generation (``chat_id`` must be validated)."""
        path = self.chats_folder / f"{chat_id}.g{int(generation)}.sqlite"
        if path.resolve().parent != self.chats_folder.resolve():
            raise InvalidIdError(chat_id, "chat id escapes the directory")
        return path

    def remove_chat_files(self, chat_id: str, generation: int) -> int:
        """Delete a chat generation's database and side files; return how many existed."""
        path = self.chat_path(chat_id, generation)
        removed = 0
        for suffix in _SIDE_SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                Path(f"{path}{suffix}").unlink()
                removed += 1
        return removed
