"""Projects in and out of a person's export: a whole project as one value, and back.

:meth:`ProjectTransfer.snapshot` gives each live project with its memory, its files (their
values and text, chunk by chunk: the bytes are never kept) and the chats in it.
:meth:`ProjectTransfer.restore` writes one back, in one transaction, idempotent as a chat's
import is: a project is known by its id, so importing the same export again changes nothing;
a newer export of it (a later ``updated_at``) updates its name, instructions, switch and
memory, adds the files it lacks and puts its chats in it. Nothing is ever removed by an import.

Everything is checked before anything is written (:func:`check_snapshot`): ids of the shape
this app mints, names and instructions as a person's are checked, memory and file text within
bounds. A refusal is an ``InvalidInputError`` saying what and why; nothing of that project is
written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Literal

from backend.errors import InvalidInputError
from backend.projects.checks import check_instructions, check_name
from backend.projects.chunks import CHUNK_CHARS
from backend.projects.files import FILE_ID_PREFIX, check_file_name
from backend.projects.store import ProjectStore
from backend.projects.values import FileSnapshot, ProjectFile, ProjectSnapshot
from backend.storage import Scope, well_formed_text

MAX_MEMORY_CHARS = 1_000_000
MAX_FILES = 1_000
MAX_FILE_CHUNKS = 20_000  # 24 M characters of text: more than any attachment's
MAX_CHATS = 100_000
_PROJECT_ID = re.compile(r"prj_[0-9a-f]{16}")
_FILE_ID = re.compile(re.escape(FILE_ID_PREFIX) + r"[0-9a-f]{16}")

Restored = Literal["new", "updated", "unchanged"]


def check_snapshot(snapshot: ProjectSnapshot) -> ProjectSnapshot:
    """``snapshot`` as it may be written (text made well-formed), or InvalidInputError."""
    project = snapshot.project
    if not isinstance(project.id, str) or not _PROJECT_ID.fullmatch(project.id):
        raise InvalidInputError(
            f"a project id must look like prj_ and 16 hex digits: {project.id!r}"
        )
    if not isinstance(project.use_personal_memory, bool):
        raise InvalidInputError("use_personal_memory must be true or false")
    for moment in (project.created_at, project.updated_at):
        if not isinstance(moment, int) or isinstance(moment, bool) or moment < 0:
            raise InvalidInputError(f"a project's times are whole milliseconds: {moment!r}")
    if not isinstance(snapshot.memory, str):
        raise InvalidInputError("a project's memory must be text")
    if len(snapshot.memory) > MAX_MEMORY_CHARS:
        raise InvalidInputError(
            f"a project's memory is longer than {MAX_MEMORY_CHARS:,} characters"
        )
    if len(snapshot.files) > MAX_FILES:
        raise InvalidInputError(f"a project has more than {MAX_FILES:,} files")
    if len(snapshot.chat_ids) > MAX_CHATS:
        raise InvalidInputError(f"a project has more than {MAX_CHATS:,} chats")
    checked = replace(
        project,
        name=check_name(project.name),
        instructions=check_instructions(project.instructions),
    )
    files = tuple(_check_file(entry, project.id) for entry in snapshot.files)
    return ProjectSnapshot(checked, well_formed_text(snapshot.memory), files, snapshot.chat_ids)


def _check_file(entry: FileSnapshot, project_id: str) -> FileSnapshot:
    file = entry.file
    if not isinstance(file.id, str) or not _FILE_ID.fullmatch(file.id):
        raise InvalidInputError(
            f"a project file id must look like pf_ and 16 hex digits: {file.id!r}"
        )
    if not isinstance(file.media_type, str) or not 0 < len(file.media_type) <= 100:
        raise InvalidInputError(f"file {file.id}: a media type of 1 to 100 characters")
    if not isinstance(file.size, int) or isinstance(file.size, bool) or file.size < 0:
        raise InvalidInputError(f"file {file.id}: its size is a count of bytes")
    if len(entry.chunks) > MAX_FILE_CHUNKS:
        raise InvalidInputError(f"file {file.id}: more than {MAX_FILE_CHUNKS:,} chunks of text")
    chunks = []
    for chunk in entry.chunks:
        if not isinstance(chunk, str) or not chunk.strip():
            raise InvalidInputError(f"file {file.id}: a chunk must be text, not blank")
        if len(chunk) > CHUNK_CHARS:
            raise InvalidInputError(f"file {file.id}: a chunk longer than {CHUNK_CHARS} characters")
        chunks.append(well_formed_text(chunk))
    checked = replace(
        file,
        project_id=project_id,
        name=check_file_name(file.name),
        media_type=well_formed_text(file.media_type),
        text_chars=sum(len(chunk) for chunk in chunks),
    )
    return FileSnapshot(checked, tuple(chunks))


class ProjectTransfer:
    """Snapshots of a person's projects, and writing one back (see the module docstring)."""

    def __init__(self, db: Scope, store: ProjectStore, changed: Callable[[str, str], None]) -> None:
        self._db = db
        self._store = store
        self._changed = changed

    def snapshot(self, chat_ids: Collection[str] | None = None) -> list[ProjectSnapshot]:
        """Every live project, oldest first; its chats limited to ``chat_ids`` when given
        (the chats an export carries)."""
        found = []
        for project in self._store.list_projects():
            members = self._store.members(project.id)
            if chat_ids is not None:
                members = [chat_id for chat_id in members if chat_id in chat_ids]
            files = tuple(
                FileSnapshot(file, tuple(self._store.chunks_of(file.id)))
                for file in self._store.files(project.id)
            )
            memory = self._store.memory(project.id) or ""
            found.append(ProjectSnapshot(project, memory, files, tuple(members)))
        return found

    def restore(self, snapshot: ProjectSnapshot, *, now_ms: int) -> Restored:
        """Write ``snapshot`` (its chat ids are this directory's) and say what it did."""
        snapshot = check_snapshot(snapshot)
        project = snapshot.project
        with self._db.transaction():
            existing = self._store.get(project.id)
            if existing is None and self._store.deleted_at(project.id) is not None:
                self._store.delete(project.id)  # deleted here, awaiting purge: imported anew
            if existing is None:
                self._store.insert(project)
                self._store.set_memory(project.id, snapshot.memory, project.updated_at)
                outcome: Restored = "new"
            elif project.updated_at > existing.updated_at:
                self._store.update(project)
                self._store.set_memory(project.id, snapshot.memory, project.updated_at)
                outcome = "updated"
            else:
                outcome = "unchanged"
            for entry in snapshot.files:
                if self._add_file(entry.file, entry.chunks) and outcome == "unchanged":
                    outcome = "updated"
            members = self._store.memberships()
            for chat_id in snapshot.chat_ids:
                if members.get(chat_id) != project.id:
                    self._store.put_member(chat_id, project.id, now_ms)
                    if outcome == "unchanged":
                        outcome = "updated"
            if outcome != "unchanged":
                self._changed(project.id, "created" if outcome == "new" else "updated")
        return outcome

    def _add_file(self, file: ProjectFile, chunks: tuple[str, ...]) -> bool:
        """Store the file unless this directory has it already (by id); whether it did."""
        if self._store.file(file.id) is not None:
            return False
        self._store.insert_file(file, chunks)
        return True
