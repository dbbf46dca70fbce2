"""The runtime's tables, inside each chat's own SQLite file (component ``"runtime"``).

Living in the same file as the conversation's messages is what lets a run commit its session
state, its final messages and its run record in ONE transaction (seed 004: "state and
messages never diverge"). Every statement goes through the chat's :class:`backend.storage.Scope`;
on PostgreSQL the same methods run the twin's statements (:mod:`backend.runtime.pg_store`,
picked by ``runtime_store_for``), keyed by the chat's scope, in the scope of its conversation.

The tables and their migrations: :mod:`backend.runtime.store_tables`.

This module stores; it does not validate. Validation lives in :mod:`backend.runtime.state`,
the only writer of session state. Titles and run errors are free text bound to TEXT columns, so
they follow the storage text rule (:func:`backend.storage.well_formed_text`).
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from backend.errors import ConflictError, LeaseLostError, RunNotFoundError, StaleVersionError
from backend.messages import Author
from backend.models import ModelRef
from backend.runtime.records import (
    Conversation,
    RunKind,
    RunRecord,
    RunStatus,
    SessionState,
    VersionPolicy,
)
from backend.runtime.store_tables import COMPONENT, MIGRATIONS
from backend.storage import IntegrityError, Row, Scope, well_formed_text


class RuntimeStore:
    """Synchronous access to the runtime tables of one chat's scope (see the module
    docstring); the statements are class attributes so the PostgreSQL twin can key them."""

    engine_kind = "sqlite"
    migrations: tuple[Any, ...] = tuple(MIGRATIONS)
    SELECT_CONVERSATION = "SELECT * FROM runtime_conversation WHERE id = ?"
    INSERT_CONVERSATION = """
    INSERT OR IGNORE INTO runtime_conversation (
        id, tenant_id, owner_principal_id, participant_ids, agent_id, agent_version_policy,
        agent_version, session_state_version, title, created_at, updated_at
    ) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)
    """
    UPDATE_BINDING = """
    UPDATE runtime_conversation
    SET agent_id = ?, agent_version_policy = ?, agent_version = ?, updated_at = ?
    WHERE id = ?
    """
    UPDATE_MODEL = """
    UPDATE runtime_conversation SET model_endpoint = ?, model_name = ?, updated_at = ? WHERE id = ?
    """
    UPDATE_TITLE = "UPDATE runtime_conversation SET title = ?, updated_at = ? WHERE id = ?"
    UPDATE_LAST_RUN = "UPDATE runtime_conversation SET last_run_id = ?, updated_at = ? WHERE id = ?"
    BUMP_STATE_VERSION = """
    UPDATE runtime_conversation
    SET session_state_version = session_state_version + 1, updated_at = ?
    WHERE id = ? AND session_state_version = ?
    """
    SELECT_STATE = """
    SELECT c.session_state_version AS version, s.state, s.bytes, s.updated_at
    FROM runtime_conversation c LEFT JOIN runtime_session_state s ON s.conversation_id = c.id
    WHERE c.id = ?
    """
    UPSERT_STATE = """
    INSERT INTO runtime_session_state (conversation_id, state, bytes, updated_at)
    VALUES (?, ?, ?, ?)
    ON CONFLICT (conversation_id) DO UPDATE
    SET state = excluded.state, bytes = excluded.bytes, updated_at = excluded.updated_at
    """
    INSERT_RUN = """
    INSERT INTO runtime_runs (
        id, conversation_id, kind, status, user_message_id, assistant_message_id,
        agent_id, agent_version, enqueued_at, requested_by_id, requested_by_name
    ) VALUES (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)
    """
    IMPORT_CONVERSATION = """
    INSERT OR REPLACE INTO runtime_conversation (
        id, tenant_id, owner_principal_id, participant_ids, agent_id, agent_version_policy,
        agent_version, session_state_version, title, last_run_id, archived_at, created_at,
        updated_at, model_endpoint, model_name
    ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    """
    SELECT_RUN = "SELECT * FROM runtime_runs WHERE id = ?"
    SELECT_OPEN_RUNS = """
    SELECT * FROM runtime_runs
    WHERE conversation_id = ? AND status IN ('queued', 'running')
    ORDER BY seq
    """
    SELECT_NEXT_QUEUED = """
    SELECT * FROM runtime_runs WHERE conversation_id = ? AND status = 'queued'
    ORDER BY enqueued_at, seq LIMIT 1
    """
    CLAIM_RUN = """
    UPDATE runtime_runs
    SET status = 'running', started_at = ?, agent_id = ?, agent_version = ?, claimed_by = ?,
        fence = ?, model_endpoint = ?, model_name = ?
    WHERE id = ? AND status = 'queued'
    """
    ADVANCE_FENCE = "UPDATE runtime_conversation SET fence = ? WHERE id = ? AND fence < ?"
    SELECT_FENCE = """
    SELECT c.fence AS newest, r.status AS status
    FROM runtime_runs r LEFT JOIN runtime_conversation c ON c.id = r.conversation_id
    WHERE r.id = ?
    """
    COUNT_RUNS = "SELECT COUNT(*) FROM runtime_runs WHERE conversation_id = ? AND status = ?"
    FINISH_RUN = """
    UPDATE runtime_runs SET status = ?, finished_at = ?, error = ?
    WHERE id = ? AND status IN ('queued', 'running')
    """

    def __init__(self, db: Scope) -> None:
        if db.engine_kind != self.engine_kind:  # else SQLite's migrations would run there
            raise TypeError(
                f"{type(self).__name__} runs on {self.engine_kind}, not {db.engine_kind}: "
                "open the runtime store with backend.runtime.pg_store.runtime_store_for"
            )
        self.db = db
        self._key: tuple[Any, ...] = ()  # the parameters every statement starts with
        db.migrate(COMPONENT, self.migrations)

    # ── conversation record ─────────────────────────────────────────

    def ensure_conversation(
        self,
        conversation_id: str,
        *,
        tenant_id: str,
        owner_principal_id: str,
        participant_ids: tuple[str, ...],
        agent_id: str,
        agent_version_policy: VersionPolicy,
        agent_version: int | None,
        title: str,
        now: int,
    ) -> Conversation:
        """Get-or-create: an existing record keeps its binding (that is the point of it)."""
        with self.db.transaction():
            self.db.execute(
                self.INSERT_CONVERSATION,
                (
                    *self._key,
                    conversation_id,
                    tenant_id,
                    owner_principal_id,
                    json.dumps(list(participant_ids)),
                    agent_id,
                    agent_version_policy,
                    agent_version,
                    well_formed_text(title),
                    now,
                    now,
                ),
            )
            conversation = self.load_conversation(conversation_id)
        assert conversation is not None
        return conversation

    def load_conversation(self, conversation_id: str) -> Conversation | None:
        row = self.db.query_one(self.SELECT_CONVERSATION, (*self._key, conversation_id))
        return _conversation(row) if row else None

    def update_binding(
        self,
        conversation_id: str,
        agent_id: str,
        policy: VersionPolicy,
        version: int | None,
        now: int,
    ) -> None:
        self.db.execute(
            self.UPDATE_BINDING, (*self._key, agent_id, policy, version, now, conversation_id)
        )

    def set_model(self, conversation_id: str, model: ModelRef | None, now: int) -> None:
        """The chat's model from the next claim on (``None``: the agent's or the default)."""
        endpoint, name = (model.endpoint, model.model) if model else (None, None)
        self.db.execute(self.UPDATE_MODEL, (*self._key, endpoint, name, now, conversation_id))

    def set_title(self, conversation_id: str, title: str, now: int) -> None:
        self.db.execute(
            self.UPDATE_TITLE, (*self._key, well_formed_text(title), now, conversation_id)
        )

    def set_last_run(self, conversation_id: str, run_id: str, now: int) -> None:
        self.db.execute(self.UPDATE_LAST_RUN, (*self._key, run_id, now, conversation_id))

    # ── session state ───────────────────────────────────────────────

    def load_state(self, conversation_id: str) -> SessionState:
        row = self.db.query_one(self.SELECT_STATE, (*self._key, conversation_id))
        return _state(row) if row else SessionState(version=0, data={})

    def put_state(
        self, conversation_id: str, expected_version: int, encoded: str, now: int
    ) -> SessionState:
        """Compare-and-set: write only if the version is still ``expected_version``.

        Idempotent: if this very write is already the current state (version
        ``expected_version + 1`` holding exactly ``encoded``), it is returned as it was stored
        and nothing is written (``backend.runtime.state`` says why).
        """
        with self.db.transaction():
            cursor = self.db.execute(
                self.BUMP_STATE_VERSION, (*self._key, now, conversation_id, expected_version)
            )
            if cursor.rowcount != 1:
                row = self.db.query_one(self.SELECT_STATE, (*self._key, conversation_id))
                actual = row["version"] if row else 0
                if row and actual == expected_version + 1 and row["state"] == encoded:
                    return _state(row)
                raise StaleVersionError("session state", expected_version, actual)
            size = len(encoded.encode())
            self.db.execute(self.UPSERT_STATE, (*self._key, conversation_id, encoded, size, now))
        return SessionState(expected_version + 1, json.loads(encoded), size, now)

    def import_record(
        self, conversation: Conversation, encoded_state: str | None, state_updated_at: int
    ) -> None:
        """Write an exported record and state document verbatim (``backend.portability``).

        For restoring an export into a fresh chat file: the record's version counter and
        timestamps are kept as exported, so a round trip gives the same document. The caller
        validates the state first (``state_schema.check_state`` gives ``encoded_state``).
        """
        with self.db.transaction():
            self.db.execute(
                self.IMPORT_CONVERSATION,
                (
                    *self._key,
                    conversation.id,
                    conversation.tenant_id,
                    conversation.owner_principal_id,
                    json.dumps(list(conversation.participant_ids)),
                    conversation.agent_id,
                    conversation.agent_version_policy,
                    conversation.agent_version,
                    conversation.session_state_version,
                    well_formed_text(conversation.title),
                    conversation.last_run_id,
                    conversation.archived_at,
                    conversation.created_at,
                    conversation.updated_at,
                    conversation.model_endpoint,
                    conversation.model_name,
                ),
            )
            if encoded_state is not None:
                size = len(encoded_state.encode())
                self.db.execute(
                    self.UPSERT_STATE,
                    (*self._key, conversation.id, encoded_state, size, state_updated_at),
                )

    # ── runs ────────────────────────────────────────────────────────

    def enqueue_run(
        self,
        *,
        run_id: str,
        conversation_id: str,
        kind: RunKind,
        user_message_id: str,
        assistant_message_id: str,
        agent_id: str,
        agent_version: int | None,
        now: int,
        requested_by: Author | None = None,
    ) -> RunRecord:
        """Queue a run; ``requested_by`` is who asked for it (kept on its reply)."""
        self.db.execute(
            self.INSERT_RUN,
            (
                *self._key,
                run_id,
                conversation_id,
                kind.value,
                user_message_id,
                assistant_message_id,
                agent_id,
                agent_version,
                now,
                requested_by.id if requested_by else None,
                requested_by.name if requested_by else None,
            ),
        )
        return self.load_run(run_id)

    def load_run(self, run_id: str) -> RunRecord:
        row = self.db.query_one(self.SELECT_RUN, (*self._key, run_id))
        if row is None:
            raise RunNotFoundError(run_id)
        return _run(row)

    def open_runs(self, conversation_id: str) -> list[RunRecord]:
        """Queued and running runs, in enqueue order."""
        return [
            _run(row) for row in self.db.query(self.SELECT_OPEN_RUNS, (*self._key, conversation_id))
        ]

    def claim_next_run(
        self,
        conversation_id: str,
        *,
        agent_id: str,
        agent_version: int | None,
        now: int,
        claimed_by: str | None = None,
        fence: int | None = None,
        model: ModelRef | None = None,
    ) -> RunRecord | None:
        """Move the oldest queued run to ``running``; ``None`` if the queue is empty.

        ``claimed_by`` names the claiming process (see ``locks.process_owner``); ``fence`` is
        the claiming lease's token, which must be newer than every earlier claim's.

        Raises :class:`ConflictError` if another run is already running (the unique index),
        :class:`LeaseLostError` if ``fence`` is not newer than the conversation's.
        """
        with self.db.transaction():
            row = self.db.query_one(self.SELECT_NEXT_QUEUED, (*self._key, conversation_id))
            if row is None:
                return None
            if fence is not None:
                advanced = self.db.write(
                    self.ADVANCE_FENCE, (*self._key, fence, conversation_id, fence)
                )
                if advanced != 1:
                    raise LeaseLostError(conversation_id, fence)
            try:
                endpoint, name = (model.endpoint, model.model) if model else (None, None)
                self.db.execute(
                    self.CLAIM_RUN,
                    (
                        *self._key,
                        now,
                        agent_id,
                        agent_version,
                        claimed_by,
                        fence,
                        endpoint,
                        name,
                        row["id"],
                    ),
                )
            except IntegrityError as exc:
                raise ConflictError(
                    f"conversation {conversation_id!r} already has a running run"
                ) from exc
            return self.load_run(row["id"])

    def fence_of(self, conversation_id: str) -> int:
        """The newest fencing token that claimed the conversation (0: none yet)."""
        row = self.db.query_one(self.SELECT_CONVERSATION, (*self._key, conversation_id))
        return int(row["fence"]) if row else 0

    def check_fence(self, run: RunRecord) -> None:
        """Raise :class:`LeaseLostError` unless ``run`` still runs under the newest claim.

        Called inside the transaction that writes for the run, so the check and the write are
        one atomic step: a newer lease's claim (or a recovery that ended the run) refuses it.
        """
        row = self.db.query_one(self.SELECT_FENCE, (*self._key, run.id))
        if row is None:
            raise RunNotFoundError(run.id)
        newer = run.fence is not None and (row["newest"] or 0) > run.fence
        if newer or row["status"] != RunStatus.RUNNING.value:
            raise LeaseLostError(run.conversation_id, run.fence)

    def count_runs(self, conversation_id: str, status: RunStatus) -> int:
        row = self.db.query_one(self.COUNT_RUNS, (*self._key, conversation_id, status.value))
        return int(row[0]) if row else 0

    def finish_run(
        self, run_id: str, status: RunStatus, *, now: int, error: str | None = None
    ) -> bool:
        """Record a final status; False if the run had already finished."""
        if error is not None:  # it may quote a model's output or a server's body
            error = well_formed_text(error)
        cursor = self.db.execute(self.FINISH_RUN, (*self._key, status.value, now, error, run_id))
        return cursor.rowcount == 1


def _state(row: Row) -> SessionState:
    data = json.loads(row["state"]) if row["state"] else {}
    return SessionState(row["version"], data, row["bytes"] or 0, row["updated_at"] or 0)


def _conversation(row: Row) -> Conversation:
    values = {name: row[name] for name in _CONVERSATION_FIELDS}
    return Conversation(**{**values, "participant_ids": tuple(json.loads(row["participant_ids"]))})


def _run(row: Row) -> RunRecord:
    values = {name: row[name] for name in _RUN_FIELDS}
    return RunRecord(**{**values, "kind": RunKind(row["kind"]), "status": RunStatus(row["status"])})


# The records' fields are the tables' column names, one for one.
_CONVERSATION_FIELDS = tuple(field.name for field in fields(Conversation))
_RUN_FIELDS = tuple(field.name for field in fields(RunRecord))
