"""``Projects``: a person's projects, the chats in them, their instructions and memory.

Open it on the person's directory (``Projects(chats)``): its tables live in the directory's
database (:mod:`backend.projects.store`, or its PostgreSQL twin), so a backup carries them.
A project's files and the per-turn context are the parts in :mod:`backend.projects.files`
and :mod:`backend.projects.turns`; this class is the one public surface over them.

Bad input gets a clear error and changes nothing: a blank or over-long name, an unknown
project (``NotFoundError``), a chat another tab just deleted (``ChatNotFoundError``). A name is
any Unicode text; the storage text rule applies (a lone surrogate is stored as U+FFFD).

Every committed change is announced to :meth:`subscribe`'s listeners after commit (the UI
refreshes every tab of the person from it). Synchronous and thread-safe, like ``Chats``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from backend.chats import Chats, ChatSummary
from backend.clock import now_ms
from backend.errors import ChatNotFoundError, InvalidInputError, NotFoundError
from backend.projects.events import ProjectEvents, ProjectListener, ProjectsChanged
from backend.projects.files import ProjectFiles
from backend.projects.store import ProjectStore
from backend.projects.turns import ProjectTurns
from backend.projects.values import DeletedChats, DeletedProject, Project, ProjectFile
from backend.storage import Scope, well_formed_text

MAX_NAME_CHARS = 100
MAX_INSTRUCTIONS_CHARS = 20_000
PROJECT_ID_PREFIX = "prj_"


def check_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidInputError("a project's name must be text")
    name = well_formed_text(name).strip()
    if not name:
        raise InvalidInputError("a project's name must not be blank")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"a project's name is longer than {MAX_NAME_CHARS} characters")
    return name


def check_instructions(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInputError("a project's instructions must be text")
    text = well_formed_text(text).strip()
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        raise InvalidInputError(
            f"a project's instructions are longer than {MAX_INSTRUCTIONS_CHARS:,} characters"
        )
    return text


def store_for(database: Scope) -> ProjectStore:
    """The store twin for the database's engine (psycopg is imported only on PostgreSQL)."""
    if database.engine_kind == "postgresql":
        from backend.projects.pg_store import PgProjectStore
        from backend.storage.postgres import PostgresScope

        assert isinstance(database, PostgresScope)
        return PgProjectStore(database)
    return ProjectStore(database)


class Projects:
    """See the module docstring."""

    def __init__(self, chats: Chats, *, clock: Callable[[], int] = now_ms) -> None:
        self._chats = chats
        self._db = chats.database
        self._store = store_for(self._db)
        self._clock = clock
        self._events = ProjectEvents()
        self.files = ProjectFiles(self._db, self._store, self.get, self._changed, clock)
        """Add, list and remove a project's documents; search their chunks."""
        self.turns = ProjectTurns(chats, self._store, self.get, self._changed, clock)
        """What a turn of a chat in a project reads and writes; searches scoped to one."""

    @property
    def directory_id(self) -> str:
        return self._chats.directory_id

    # ── projects ────────────────────────────────────────────────────

    def list_projects(self) -> list[Project]:
        """Every project of the person, oldest first (the sidebar's order)."""
        return self._store.list_projects()

    def get(self, project_id: str) -> Project:
        if not isinstance(project_id, str):
            raise InvalidInputError("a project id must be text")
        found = self._store.get(project_id)
        if found is None:
            raise NotFoundError("project", project_id)
        return found

    def create(self, name: str, *, instructions: str = "") -> Project:
        name, instructions = check_name(name), check_instructions(instructions)
        now = self._clock()
        project = Project(
            PROJECT_ID_PREFIX + uuid.uuid4().hex[:16], name, instructions, True, now, now
        )
        with self._db.transaction():
            self._store.insert(project)
            self._changed(project.id, "created")
        return project

    def rename(self, project_id: str, name: str) -> Project:
        return self._update(project_id, name=check_name(name))

    def set_instructions(self, project_id: str, instructions: str) -> Project:
        return self._update(project_id, instructions=check_instructions(instructions))

    def set_use_personal_memory(self, project_id: str, use: bool) -> Project:
        if not isinstance(use, bool):
            raise InvalidInputError("use_personal_memory must be true or false")
        return self._update(project_id, use_personal_memory=use)

    def _update(self, project_id: str, **changes: object) -> Project:
        with self._db.transaction():
            project = replace(self.get(project_id), **changes, updated_at=self._clock())  # type: ignore[arg-type]
            self._store.update(project)
            self._changed(project_id, "updated")
        return project

    def delete(self, project_id: str, chats: DeletedChats) -> DeletedProject:
        """Delete a project; its chats move out to the loose list, or are deleted.

        Deleted chats are soft-deleted as any chat is (``Chats.restore_chat`` undoes each,
        back as a loose chat). The project's files and memory go with it.
        """
        if chats not in ("move_out", "delete"):
            raise InvalidInputError("say what becomes of the chats: 'move_out' or 'delete'")
        project = self.get(project_id)
        members = self._store.members(project_id)
        deleted: list[str] = []
        if chats == "delete":
            for chat_id in members:
                try:
                    self._chats.delete_chat(chat_id)
                except ChatNotFoundError:
                    continue  # deleted already (another tab): nothing to undo for it here
                deleted.append(chat_id)
        with self._db.transaction():
            self._store.delete(project_id)
            self._changed(project_id, "deleted")
        moved = tuple(chat_id for chat_id in members if chat_id not in deleted)
        return DeletedProject(project, moved if chats == "move_out" else (), tuple(deleted))

    # ── chats in projects ───────────────────────────────────────────

    def project_of(self, chat_id: str) -> Project | None:
        """The project a chat is in (None: a loose chat)."""
        project_id = self._store.project_of(chat_id)
        return None if project_id is None else self._store.get(project_id)

    def memberships(self) -> dict[str, str]:
        """Every chat id in a project → that project's id (deleted chats included)."""
        return self._store.memberships()

    def chats_of(self, project_id: str) -> list[ChatSummary]:
        """The live chats of a project, newest first."""
        self.get(project_id)
        found = []
        for chat_id in self._store.members(project_id):
            try:
                found.append(self._chats.get_summary(chat_id))
            except ChatNotFoundError:
                continue  # deleted (its row stays so that an undo brings it back here)
        return sorted(found, key=lambda s: (s.updated_at, s.id), reverse=True)

    def move_chat(self, chat_id: str, project_id: str | None) -> ChatSummary:
        """Put a live chat in ``project_id``, or take it out of any project (``None``)."""
        summary = self._chats.get_summary(chat_id)  # ChatNotFoundError: deleted meanwhile
        with self._db.transaction():
            if project_id is None:
                self._store.drop_member(chat_id)
            else:
                self.get(project_id)
                self._store.put_member(chat_id, project_id, self._clock())
            self._changed(project_id or "", "chat_moved", chat_id)
        return summary

    def create_chat(self, project_id: str, title: str | None = None) -> ChatSummary:
        """A new chat that starts inside ``project_id``."""
        self.get(project_id)
        summary = self._chats.create_chat(title)
        self.move_chat(summary.id, project_id)
        return summary

    # ── memory ──────────────────────────────────────────────────────

    def memory(self, project_id: str) -> str:
        self.get(project_id)
        return self._store.memory(project_id) or ""

    def set_memory(self, project_id: str, content: str) -> None:
        if not isinstance(content, str):
            raise InvalidInputError("a project's memory must be text")
        with self._db.transaction():
            self.get(project_id)
            self._store.set_memory(project_id, well_formed_text(content), self._clock())
            self._changed(project_id, "memory")

    def add_file(self, project_id: str, name: str, media_type: str, data: bytes) -> ProjectFile:
        """Shortcut for ``files.add`` (see :class:`backend.projects.files.ProjectFiles`)."""
        return self.files.add(project_id, name, media_type, data)

    # ── events ──────────────────────────────────────────────────────

    def subscribe(self, listener: ProjectListener) -> Callable[[], None]:
        """Call ``listener(event)`` after every committed change; returns unsubscribe."""
        return self._events.subscribe(listener)

    def _changed(self, project_id: str, kind: str, chat_id: str = "") -> None:
        event = ProjectsChanged(self.directory_id, project_id, kind, chat_id)
        self._db.after_commit(lambda: self._events.emit(event))
