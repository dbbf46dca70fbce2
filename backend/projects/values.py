"""The values the projects service hands out: frozen, so a reader cannot change a store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DeletedChats = Literal["move_out", "delete"]
"""What becomes of a deleted project's chats: back to the loose list, or deleted (undoable)."""


@dataclass(frozen=True, slots=True)
class Project:
    id: str
    name: str
    instructions: str
    use_personal_memory: bool  # whether the person's shared memory reaches its chats too
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """A document of a project: its text was extracted once and stored as chunks."""

    id: str
    project_id: str
    name: str
    media_type: str
    size: int  # bytes of the file as uploaded
    text_chars: int  # characters of text extracted from it (what the chunks hold)
    created_at: int


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """One chunk of a project file that matched a query."""

    project_id: str
    doc: int  # the chunk's key (an embedding of it would be keyed the same)
    file_id: str
    file_name: str
    seq: int  # its place in the file, from 0
    text: str
    rank: float  # lower is better (FTS5's bm25 order)


@dataclass(frozen=True, slots=True)
class ProjectTurn:
    """What one turn of a chat in a project adds to its prompt (``Projects.turn_context``).

    The runtime reads it through ``backend.runtime.project_context.ProjectTurnView``.
    """

    project_id: str
    name: str
    instructions: str
    memory: str  # the project's memory block ("" when empty)
    use_personal_memory: bool
    file_chunks: tuple[ChunkHit, ...]  # best first, within the turn's budget
    chat_ids: frozenset[str]  # the chats a search from this turn may quote


@dataclass(frozen=True, slots=True)
class DeletedProject:
    """What a project's deletion did: the chats moved out or deleted (those can be undone)."""

    project: Project
    moved_out: tuple[str, ...]
    deleted: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """A project file as it travels in an export: its values and its text, chunk by chunk."""

    file: ProjectFile
    chunks: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    """A whole project as it travels in an export (``Projects.transfer``)."""

    project: Project
    memory: str
    files: tuple[FileSnapshot, ...]
    chat_ids: tuple[str, ...]  # its chats: ids of the exporting directory, or of this one
