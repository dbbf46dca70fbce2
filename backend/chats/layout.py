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

Which chat generations have storage, and removing it, is :class:`ChatFiles`: the files of the
``chats/`` folder here (:class:`FolderChatFiles`); on PostgreSQL, where a path only names a
scope and nothing is on disk, rows of the directory (:mod:`backend.chats.pg_layout`).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Protocol

from backend.chats.ids import validate_directory_id
from backend.data_folder import CHATS_FOLDER, DIRECTORY_FILE, SIDE_SUFFIXES
from backend.errors import InvalidIdError
from backend.sessions import Sessions

_SIDE_SUFFIXES = ("", *SIDE_SUFFIXES)


class DirectoryLayout:
    """The paths of one directory under ``root``."""

    def __init__(self, root: str | Path, directory_id: str, *, on_disk: bool = True) -> None:
        self.directory_id = validate_directory_id(directory_id)
        self.root = Path(root)
        self.folder = self.root / self.directory_id
        self.database_path = self.folder / DIRECTORY_FILE
        self.chats_folder = self.folder / CHATS_FOLDER
        self.on_disk = on_disk
        """False on PostgreSQL: the paths only name scopes, and nothing here touches the disk."""

    def ensure_folders(self) -> None:
        if self.on_disk:
            self.chats_folder.mkdir(parents=True, exist_ok=True)

    def chat_path(self, chat_id: str, generation: int) -> Path:
        """The database file of one chat generation (``chat_id`` must be validated)."""
        path = self.chats_folder / f"{chat_id}.g{int(generation)}.sqlite"
        if self.on_disk:
            escapes = path.resolve().parent != self.chats_folder.resolve()
        else:  # by the names alone: a scope name never follows a link on disk
            escapes = os.path.dirname(os.path.normpath(path)) != os.path.normpath(self.chats_folder)
        if escapes:
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


class ChatFiles(Protocol):
    """The chat generations whose conversation has storage (a file, or a scope's rows)."""

    def exists(self, chat_id: str, generation: int) -> bool:
        """Whether the generation's conversation was ever opened (and is not removed)."""
        ...

    def opening(self, chat_id: str, generation: int) -> None:
        """Called before the generation's conversation opens (which creates its storage)."""
        ...

    def stored(self) -> list[tuple[str, int]]:
        """``(chat_id, generation)`` of every generation with storage (the stale sweep)."""
        ...

    def retire(self, chat_id: str, generation: int) -> None:
        """Make every handle still open on the generation, anywhere, refuse writes."""
        ...

    def remove(self, chat_id: str, generation: int) -> None:
        """Delete the generation's storage (after :meth:`retire`)."""
        ...


class FolderChatFiles:
    """:class:`ChatFiles` as the files of the directory's ``chats/`` folder (SQLite)."""

    def __init__(self, layout: DirectoryLayout) -> None:
        self.layout = layout

    def exists(self, chat_id: str, generation: int) -> bool:
        return self.layout.chat_path(chat_id, generation).exists()

    def opening(self, chat_id: str, generation: int) -> None:
        """Nothing to note: opening the file creates it, and the file is the fact."""

    def stored(self) -> list[tuple[str, int]]:
        found = []
        for path in sorted(self.layout.chats_folder.glob("*.g*.sqlite")):
            chat_id, _, generation_text = path.name[: -len(".sqlite")].rpartition(".g")
            if generation_text.isdigit():
                found.append((chat_id, int(generation_text)))
        return found

    def retire(self, chat_id: str, generation: int) -> None:
        Sessions.retire_file(self.layout.chat_path(chat_id, generation))

    def remove(self, chat_id: str, generation: int) -> None:
        self.layout.remove_chat_files(chat_id, generation)
