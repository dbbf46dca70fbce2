"""``AgentLibrary``: one user's agents, every save a new immutable version.

Open it on the user's directory database (``AgentLibrary(chats.database, check_model=...)``:
the library's tables live beside the chat index, so a backup of the directory carries them).
Synchronous; the UI calls it from a worker thread.

* ``create(spec)`` / ``save(agent_id, spec, expected_version=...)`` → the new
  :class:`AgentVersion`. The spec is checked first (``definition.checked_spec``), then its
  model (``check_model``, e.g. ``ModelEndpoints.check_model``: refused when the endpoint
  answers and does not list it). Only then one transaction writes: nothing is saved half-way.
  ``expected_version`` makes a save from a stale form fail (``StaleVersionError``) instead of
  silently stacking on a version the user never saw.
* ``load(agent_id, version=None)`` → one version (the newest when ``None``); any version stays
  readable, a deleted agent's too (chats bound to it keep running).
* ``list_agents()`` → the live agents by last change; ``versions(agent_id, before=, limit=)``
  → one page of history, newest first. Nothing reads a whole history at once.
* ``default_agent_id()`` / ``set_default(agent_id | None)``: what a new chat starts with
  (``None``: the built-in assistant).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from backend.agents.definition import (
    AgentSpec,
    AgentSummary,
    AgentVersion,
    VersionInfo,
    checked_spec,
)
from backend.agents.store import AgentStore
from backend.clock import now_ms
from backend.errors import AgentNotFoundError, StaleVersionError
from backend.models import ModelRef
from backend.storage import Scope

DEFAULT_PAGE = 20
MAX_PAGE = 100
AGENT_ID_PREFIX = "agent_"


class AgentLibrary:
    """See the module docstring. Thread-safe (the database serialises its connection)."""

    def __init__(
        self,
        database: Scope,
        *,
        check_model: Callable[[ModelRef], None] | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._db = database
        self._store = _store_for(database)
        self._check_model = check_model
        self._clock = clock

    # ── writes ──────────────────────────────────────────────────────

    def create(self, spec: AgentSpec) -> AgentVersion:
        spec = self._checked(spec)
        agent_id = AGENT_ID_PREFIX + uuid.uuid4().hex[:16]
        now = self._clock()
        with self._db.transaction():
            self._store.insert_agent(agent_id, spec, now)
        return AgentVersion(agent_id, 1, spec, now)

    def save(
        self, agent_id: str, spec: AgentSpec, *, expected_version: int | None = None
    ) -> AgentVersion:
        """Append the next version of ``agent_id``; older versions stay as they were."""
        spec = self._checked(spec)
        now = self._clock()
        with self._db.transaction():
            head = self._store.head(agent_id)
            if head is None or head[1]:
                raise AgentNotFoundError(agent_id)
            latest = head[0]
            if expected_version is not None and expected_version != latest:
                raise StaleVersionError(f"agent {agent_id}", expected_version, latest)
            appended = self._store.append_version(agent_id, latest, spec, now)
            assert appended  # the head was read in this same write transaction
        return AgentVersion(agent_id, latest + 1, spec, now)

    def delete(self, agent_id: str) -> None:
        """Hide an agent from the library; chats bound to it keep running its versions."""
        with self._db.transaction():
            if not self._store.mark_deleted(agent_id, self._clock()):
                raise AgentNotFoundError(agent_id)
            if self._store.default_agent() == agent_id:
                self._store.set_default_agent(None)

    def set_default(self, agent_id: str | None) -> None:
        with self._db.transaction():
            if agent_id is not None:
                head = self._store.head(agent_id)
                if head is None or head[1]:
                    raise AgentNotFoundError(agent_id)
            self._store.set_default_agent(agent_id)

    # ── reads ───────────────────────────────────────────────────────

    def load(self, agent_id: str, version: int | None = None) -> AgentVersion:
        found = self._store.load(agent_id, version)
        if found is None:
            raise AgentNotFoundError(agent_id, version)
        return found

    def latest_version(self, agent_id: str) -> int:
        """The newest version number (one indexed read; what a pinned chat compares with)."""
        head = self._store.head(agent_id)
        if head is None:
            raise AgentNotFoundError(agent_id)
        return head[0]

    def list_agents(self) -> list[AgentSummary]:
        default = self._store.default_agent()
        return [
            AgentSummary(a.agent_id, a.name, a.latest_version, a.updated_at, a.agent_id == default)
            for a in self._store.list_live()
        ]

    def versions(
        self, agent_id: str, *, before: int | None = None, limit: int = DEFAULT_PAGE
    ) -> list[VersionInfo]:
        """History newest first; pass the last ``version`` seen as ``before`` for the next page."""
        limit = max(1, min(limit, MAX_PAGE))
        start = before if before is not None else self.latest_version(agent_id) + 1
        return self._store.versions(agent_id, start, limit)

    def default_agent_id(self) -> str | None:
        return self._store.default_agent()

    def versions_saved(self) -> int:
        """A number that grows with every save of any agent (one small read): lets a process
        notice agents another process saved."""
        return self._store.versions_saved()

    def _checked(self, spec: AgentSpec) -> AgentSpec:
        spec = checked_spec(spec)
        if spec.model is not None and self._check_model is not None:
            self._check_model(spec.model)  # outside any transaction: it may ask a server
        return spec


def _store_for(database: Scope) -> AgentStore:
    """The store twin for the database's engine (psycopg is imported only on PostgreSQL)."""
    if database.engine_kind == "postgresql":
        from backend.agents.pg_store import PgAgentStore
        from backend.storage.postgres import PostgresScope

        assert isinstance(database, PostgresScope)
        return PgAgentStore(database)
    return AgentStore(database)
