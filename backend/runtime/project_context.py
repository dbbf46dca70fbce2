"""What a chat's project adds to a turn: the runtime's side of projects, as a seam.

The runtime never imports ``backend.projects``: it reads a :class:`ProjectSource` (a
``backend.projects.Projects``' ``turns`` satisfies it; mypy checks that where the app builds
the runtime). For a chat in a project, a turn gets, after the agent's own prompt:

* the project's instructions (a ``block`` section headed by its name);
* the project's memory (a ``memory`` section), and the person's shared memory only when the
  project's switch says so;
* the best chunks of the project's files within :data:`FILES_BUDGET_TOKENS`;
* retrieval and the ``search_chats`` tool limited to the project's own chats;
* ``remember`` writing to the project's memory.

A loose chat's turn is unchanged. Reading the project fails soft (logged, no project context
this turn), as shared memory does: a turn is never lost to an aid.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from backend.models import ContextItem, ContextSection

logger = logging.getLogger(__name__)

FILES_BUDGET_TOKENS = 1_500
"""Tokens of a turn given to the project's file chunks (``backend.projects`` uses the same)."""


class ChunkView(Protocol):
    @property
    def file_name(self) -> str: ...

    @property
    def file_id(self) -> str: ...

    @property
    def seq(self) -> int: ...

    @property
    def text(self) -> str: ...


class ProjectTurnView(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def instructions(self) -> str: ...

    @property
    def memory(self) -> str: ...

    @property
    def use_personal_memory(self) -> bool: ...

    @property
    def file_chunks(self) -> Sequence[ChunkView]: ...

    @property
    def chat_ids(self) -> frozenset[str]: ...


class ProjectSource(Protocol):
    """The projects of the runtime's directory, as a turn needs them."""

    def turn_context(
        self, chat_id: str, query: str, budget_tokens: int = ...
    ) -> ProjectTurnView | None: ...

    def remember(self, chat_id: str, fact: str) -> bool: ...


def read_project(
    source: ProjectSource | None, chat_id: str, query: str, budget_tokens: int = FILES_BUDGET_TOKENS
) -> ProjectTurnView | None:
    """The chat's project context for a turn (None: a loose chat, or unreadable now)."""
    if source is None:
        return None
    try:
        return source.turn_context(chat_id, query, budget_tokens)
    except Exception:  # an aid: the turn goes on without it
        logger.warning("could not read the project of chat %s", chat_id, exc_info=True)
        return None


def project_sections(project: ProjectTurnView | None) -> tuple[ContextSection, ...]:
    """The prompt sections a project adds, in order: instructions, memory, file chunks."""
    if project is None:
        return ()
    sections = [
        ContextSection("block", f"Project: {project.name}", text=project.instructions),
    ]
    if project.memory.strip():
        items = tuple(
            ContextItem(line.strip().removeprefix("- ").strip(), source="project memory")
            for line in project.memory.splitlines()
            if line.strip()
        )
        sections.append(
            ContextSection("memory", "Project memory", text=project.memory.strip(), items=items)
        )
    if project.file_chunks:
        items = tuple(
            ContextItem(chunk.text, source=chunk.file_name, ref=f"{chunk.file_id}#{chunk.seq}")
            for chunk in project.file_chunks
        )
        sections.append(ContextSection("retrieval", "From the project's files", items=items))
    return tuple(sections)
