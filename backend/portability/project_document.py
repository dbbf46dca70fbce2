"""A person's projects in a ``.zip`` export: ``projects.json``, written and read back.

Written beside the chats (``docs/export-format.md``): each live project with its name,
instructions, personal-memory switch, memory, files (values and text, chunk by chunk: the
uploaded bytes are not kept, so none travel) and the ids of its chats **that the zip
carries**. Read back as one :class:`ImportedProject` per project, its chats named by the
source keys their documents import under (so they map to this directory's chat ids however
the chats were keyed); a project entry that cannot be read is one :class:`Refused` naming it
(its name escaped), and the others import. The writing side is
:meth:`backend.projects.Projects.transfer` (checked, idempotent, one transaction each).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from backend.chats import Chats, SourceKey
from backend.errors import InvalidInputError
from backend.portability.document import EXPORT_VERSION, Refused
from backend.projects import Projects
from backend.projects.values import FileSnapshot, Project, ProjectFile, ProjectSnapshot

PROJECTS_NAME = "projects.json"
PROJECTS_FORMAT = "chats.projects"
MAX_PROJECTS = 10_000
_NAME_IN_REPORTS = 60


@dataclass(frozen=True, slots=True)
class ImportedProject:
    """One project to write: its snapshot (no chat ids) and the source keys of its chats."""

    snapshot: ProjectSnapshot
    chats: tuple[SourceKey, ...]

    @property
    def label(self) -> str:
        return project_label(self.snapshot.project.id, self.snapshot.project.name)


def project_label(project_id: object, name: object) -> str:
    """How a report names a project: its id and its name escaped and shortened."""
    text = name if isinstance(name, str) else ""
    if len(text) > _NAME_IN_REPORTS:
        text = text[: _NAME_IN_REPORTS - 1] + "…"
    return f"project {project_id!s:.40} {text!r}"


def projects_document(chats: Chats, chat_ids: list[str]) -> dict[str, Any]:
    """``projects.json`` of an export carrying ``chat_ids``."""
    carried = set(chat_ids)
    return {
        "format": PROJECTS_FORMAT,
        "version": EXPORT_VERSION,
        "projects": [_entry(s) for s in Projects(chats).transfer.snapshot(carried)],
    }


def _entry(snapshot: ProjectSnapshot) -> dict[str, Any]:
    project = snapshot.project
    return {
        "id": project.id,
        "name": project.name,
        "instructions": project.instructions,
        "use_personal_memory": project.use_personal_memory,
        "memory": snapshot.memory,
        "created_at": project.created_at,
        "updated_at": project.updated_at,
        "chats": list(snapshot.chat_ids),
        "files": [
            {
                "id": entry.file.id,
                "name": entry.file.name,
                "media_type": entry.file.media_type,
                "size": entry.file.size,
                "created_at": entry.file.created_at,
                "chunks": list(entry.chunks),
            }
            for entry in snapshot.files
        ],
    }


def imported_projects(
    document: Any, keys: Mapping[str, SourceKey]
) -> Iterator[ImportedProject | Refused]:
    """Each project of a read ``projects.json``; ``keys``: exported chat id → source key."""
    if not isinstance(document, dict) or document.get("format") != PROJECTS_FORMAT:
        yield Refused(PROJECTS_NAME, "not a projects document")
        return
    version = document.get("version")
    if not isinstance(version, int) or version > EXPORT_VERSION:
        yield Refused(PROJECTS_NAME, f"version {version!r}; this version reads up to 1")
        return
    entries = document.get("projects")
    if not isinstance(entries, list):
        yield Refused(PROJECTS_NAME, "its projects are not a list")
        return
    if len(entries) > MAX_PROJECTS:
        yield Refused(PROJECTS_NAME, f"more than {MAX_PROJECTS:,} projects")
        return
    for entry in entries:
        try:
            yield _project(entry, keys)
        except (InvalidInputError, KeyError, TypeError, ValueError) as exc:
            item = entry if isinstance(entry, dict) else {}
            label = project_label(item.get("id"), item.get("name"))
            yield Refused(label, f"unreadable: {exc}")


def _project(entry: Any, keys: Mapping[str, SourceKey]) -> ImportedProject:
    if not isinstance(entry, dict):
        raise ValueError("a project entry is an object")
    project = Project(
        _text(entry, "id"),
        _text(entry, "name"),
        _text(entry, "instructions"),
        _flag(entry["use_personal_memory"]),
        _ms(entry["created_at"]),
        _ms(entry["updated_at"]),
    )
    files = entry.get("files") or []
    chat_ids = entry.get("chats") or []
    if not isinstance(files, list) or not isinstance(chat_ids, list):
        raise ValueError("files and chats are lists")
    snapshot = ProjectSnapshot(
        project,
        _text(entry, "memory"),
        tuple(_file(item, project.id) for item in files),
        (),
    )
    chats = tuple(
        keys[chat_id] for chat_id in chat_ids if isinstance(chat_id, str) and chat_id in keys
    )
    return ImportedProject(snapshot, chats)


def _file(item: Any, project_id: str) -> FileSnapshot:
    if not isinstance(item, dict):
        raise ValueError("a file entry is an object")
    chunks = item.get("chunks")
    if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
        raise ValueError("a file's chunks are a list of text")
    file = ProjectFile(
        _text(item, "id"),
        project_id,
        _text(item, "name"),
        _text(item, "media_type"),
        _ms(item["size"]),
        sum(len(chunk) for chunk in chunks),
        _ms(item["created_at"]),
    )
    return FileSnapshot(file, tuple(chunks))


def _text(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{key} is text")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("use_personal_memory is true or false")
    return value


def _ms(value: object) -> int:
    """A whole non-negative number (JSON numbers are read as floats)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError(f"{value!r} is no whole number")
    if value < 0 or value != int(value) or value > 2**53:
        raise ValueError(f"{value!r} is no whole number")
    return int(value)
