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
from backend.projects.checks import check_instructions, check_name
from backend.projects.events import ProjectListener, ProjectsChanged, events_of
from backend.projects.files import ProjectFiles
from backend.projects.store import ProjectStore
from backend.projects.transfer import ProjectTransfer
from backend.projects.turns import ProjectTurns
from backend.projects.values import DeletedChats, DeletedProject, Project, ProjectFile
from backend.storage import Scope, well_formed_text

PROJECT_ID_PREFIX = "prj_"


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

    def __init__(
        self,
        chats: Chats,
        *,
        clock: Callable[[], int] = now_ms,
        soft_delete_window_s: float | None = None,
    ) -> None:
        """``soft_delete_window_s``: the directory's (the settings'), after which a project
        deleted with its chats is purged; None (an export's, an import's ``Projects``): this
        one purges none, the app's and the CLI's do."""
        self._chats = chats
        self._db = chats.database
        self._store = store_for(self._db)
        self._clock = clock
        self._window_ms = None if soft_delete_window_s is None else int(soft_delete_window_s * 1000)
        self._events = events_of(chats)
        self.sweep()
        self.files = ProjectFiles(self._db, self._store, self.get, self._changed, clock)
        """Add, list and remove a project's documents; search their chunks."""
        self.turns = ProjectTurns(chats, self._store, self.get, self._changed, clock)
        """What a turn of a chat in a project reads and writes; searches scoped to one."""
        self.transfer = ProjectTransfer(self._db, self._store, self._changed)
        """Whole projects out to an export and back from an import."""

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

        Moved out: the project, its files and memory are gone at once. Deleted with its chats:
        the chats are soft-deleted as any chat is and the project is kept, marked, for the
        same window, so one :meth:`restore` brings back the project and all those chats
        (chats deleted before, on their own, are not part of it and stay deleted).
        """
        if chats not in ("move_out", "delete"):
            raise InvalidInputError("say what becomes of the chats: 'move_out' or 'delete'")
        project = self.get(project_id)
        members = self._store.members(project_id)
        if chats == "move_out":
            with self._db.transaction():
                self._store.delete(project_id)
                self._changed(project_id, "deleted")
            self.sweep()
            return DeletedProject(project, tuple(members), ())
        with self._db.transaction():
            self._store.mark_deleted(project_id, self._clock())
            self._changed(project_id, "deleted")
        deleted: list[str] = []
        for chat_id in members:
            try:
                self._chats.get_summary(chat_id)
                self._chats.delete_chat(chat_id)
            except ChatNotFoundError:  # deleted already: not this deletion's to undo
                with self._db.transaction():
                    self._store.drop_member(chat_id)
                continue
            deleted.append(chat_id)
        self.sweep()
        return DeletedProject(project, (), tuple(deleted))

    def restore(self, project_id: str) -> Project:
        """Undo :meth:`delete` with its chats: the project and every chat it deleted come back
        (a chat past the soft-delete window is gone for good and stays out)."""
        if not isinstance(project_id, str):
            raise InvalidInputError("a project id must be text")
        with self._db.transaction():
            if self._store.deleted_at(project_id) is None:
                return self.get(project_id)  # live (restored in another tab) or NotFoundError
            self._store.mark_deleted(project_id, None)
            for chat_id in self._store.members(project_id):
                try:
                    self._chats.restore_chat(chat_id)
                except ChatNotFoundError:  # purged: its window has passed
                    self._store.drop_member(chat_id)
            self._changed(project_id, "created")
        return self.get(project_id)

    def sweep(self, *, now_ms: int | None = None) -> list[str]:
        """Purge the projects deleted with their chats longer than the window ago."""
        if self._window_ms is None:
            return []
        now = self._clock() if now_ms is None else now_ms
        purged = self._store.deleted_before(now - self._window_ms)
        for project_id in purged:
            with self._db.transaction():
                self._store.delete(project_id)
        return purged

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
