"""What a turn of a chat in a project reads and writes, and searches scoped to a project.

* :meth:`ProjectTurns.turn_context`: the project's name, instructions and memory, whether the
  person's shared memory is used too, the best chunks of its files for the turn's text within
  a budget, and the chats a search from that turn may quote (the project's own). The runtime
  reads it through ``backend.runtime.project_context``.
* :meth:`ProjectTurns.remember`: the model's ``remember`` in a project chat lands in the
  project's memory (one appending statement: concurrent calls all land).
* :meth:`ProjectTurns.search`: a search started in a project — its chats' messages (each chat
  asked in its own index, so none is crowded out by other chats' hits) and its files' chunks
  first, then (unless ``only``) the rest of the person's messages.

A project never sees another's memory, files or chats: every read is keyed by the one
project the chat is in (``tests/projects/test_isolation.py`` drives 1,000 turns to show it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

from backend.chats import ChatHit, Chats
from backend.chats.fanout import SearchResultLike, fanout_search
from backend.chats.text import any_terms_query
from backend.errors import ChatNotFoundError, InvalidInputError
from backend.projects.store import ProjectStore
from backend.projects.values import ChunkHit, Project, ProjectTurn
from backend.sessions import SearchResult
from backend.sessions.tokens import CHARS_PER_TOKEN
from backend.storage import well_formed_text

FILES_BUDGET_TOKENS = 1_500
"""Tokens of a turn's prompt given to a project's file chunks (the context meter shows it)."""
CHUNK_CANDIDATES = 12
MEMORY_LINE_PREFIX = "- "
SEARCH_LIMIT = 20


@dataclass(frozen=True, slots=True)
class ProjectSearch:
    """A search started in a project: its chats' hits and file chunks, then the others'."""

    project_id: str
    messages: tuple[ChatHit, ...]  # the project's chats' messages, best first
    files: tuple[ChunkHit, ...]  # its files' chunks, best first
    elsewhere: tuple[ChatHit, ...]  # other chats' messages ("first", not "only")


class ProjectTurns:
    def __init__(
        self,
        chats: Chats,
        store: ProjectStore,
        get_project: Callable[[str], Project],
        changed: Callable[[str, str], None],
        clock: Callable[[], int],
    ) -> None:
        self._chats = chats
        self._store = store
        self._get = get_project
        self._changed = changed
        self._clock = clock

    def turn_context(
        self, chat_id: str, query: str, budget_tokens: int = FILES_BUDGET_TOKENS
    ) -> ProjectTurn | None:
        """The project context of a turn of ``chat_id`` (None: a loose chat)."""
        project_id = self._store.project_of(chat_id)
        project = None if project_id is None else self._store.get(project_id)
        if project is None:
            return None
        return ProjectTurn(
            project_id=project.id,
            name=project.name,
            instructions=project.instructions,
            memory=self._store.memory(project.id) or "",
            use_personal_memory=project.use_personal_memory,
            file_chunks=self._chunks_within(project.id, query, budget_tokens),
            chat_ids=frozenset(self._store.members(project.id)),
        )

    def _chunks_within(
        self, project_id: str, query: str, budget_tokens: int
    ) -> tuple[ChunkHit, ...]:
        match = any_terms_query(query) if query else None
        if match is None or budget_tokens <= 0:
            return ()
        left = budget_tokens * CHARS_PER_TOKEN
        chosen: list[ChunkHit] = []
        for hit in self._store.search_chunks(project_id, match, CHUNK_CANDIDATES):
            if len(hit.text) > left:
                continue  # a smaller, lower-ranked chunk may still fit
            chosen.append(hit)
            left -= len(hit.text)
        return tuple(chosen)

    def remember(self, chat_id: str, fact: str) -> bool:
        """Append ``fact`` to the memory of the chat's project; False for a loose chat."""
        project_id = self._store.project_of(chat_id)
        if project_id is None:
            return False
        line = f"{MEMORY_LINE_PREFIX}{well_formed_text(fact)}\n"
        with self._chats.database.transaction():
            if not self._store.append_memory(project_id, line, self._clock()):
                return False  # the project was deleted meanwhile: the chat is loose now
            self._changed(project_id, "memory")
        return True

    def search(
        self, project_id: str, query: str, *, only: bool = False, limit: int = SEARCH_LIMIT
    ) -> ProjectSearch:
        """Messages and file chunks of ``project_id`` matching ``query``, then (unless
        ``only``) the person's other messages. The message search is the directory's."""
        if not isinstance(query, str):
            raise InvalidInputError("a search must be text")
        self._get(project_id)
        members = self._store.members(project_id)
        # Frozen results meet fanout's protocol in all but mypy's reading of read-only fields.
        per_chat = cast(
            Iterable[tuple[str, Sequence[SearchResultLike]]], self._per_chat(members, query, limit)
        )
        inside = tuple(fanout_search(per_chat, query, limit))
        outside: tuple[ChatHit, ...] = ()
        if not only and len(inside) < limit:
            # The directory's limit is global: ask for more, so others' hits are not crowded
            # out by the project's own before they are split.
            hits = self._chats.search_messages(query, limit=min(limit * 5, 200))
            chosen = set(members)
            outside = tuple(h for h in hits if h.chat_id not in chosen)[: limit - len(inside)]
        match = any_terms_query(query)
        files = () if match is None else tuple(self._store.search_chunks(project_id, match, limit))
        return ProjectSearch(project_id, inside, files, outside)

    def _per_chat(
        self, chat_ids: list[str], query: str, limit: int
    ) -> Iterator[tuple[str, list[SearchResult]]]:
        """Each live chat of the project asked in its own index (exact, whatever others hold)."""
        for chat_id in chat_ids:
            try:
                chat = self._chats.get_chat(chat_id)
            except ChatNotFoundError:
                continue  # deleted: its membership waits for an undo
            if chat.has_file:
                yield chat_id, chat.session.search(query, limit=limit)
