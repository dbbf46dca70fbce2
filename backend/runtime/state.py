"""Session state: the only way working memory is read and written.

Seed 004: session state is "written by the runtime and by tools through a typed, size-bounded
handle — never by raw model output. The model proposes changes; a deterministic write commits
them." Here:

* :class:`SessionStateStore` is ``get``/``put`` with ``expected_version``: every ``put``
  validates (JSON object, size ceiling, agent schema, no secret-looking keys) and then does a
  compare-and-set. A stale version raises :class:`StaleVersionError`; nothing is merged.
* :class:`SessionStateHandle` is what one run holds. It is opened at claim time with the
  version read then; tools call :meth:`SessionStateHandle.propose`, which validates at once
  (so the tool can tell the model what was wrong) and stages the new document. The runtime
  commits the staged document with :meth:`SessionStateHandle.commit` inside the transaction
  that finalises the turn. Model text is never parsed into state.

**Retries.** A commit whose outcome its caller could not learn (the connection to PostgreSQL
dropped during ``COMMIT``, a failover) may have landed. The compare-and-set is therefore
idempotent: ``put`` with the same ``expected_version`` and the same document, when the current
state is exactly that document at ``expected_version + 1``, returns it and writes nothing; so
retrying the same call after an unknown outcome succeeds whether the first attempt landed or
not, and never bumps the version twice. We chose this over a request id because it needs no new
column or argument and a blind retry of the same call (the failover bench's, a whole
transaction re-run) stays correct. Its two edges, both harmless: a *different* writer that
stored the identical document from the same version also makes the retry succeed (the state
is what this write asked for, at the version it would have made); and if yet another write
landed after this one before the retry, the retry raises :class:`StaleVersionError`, which is
the truth the caller must act on anyway (the current state is no longer the one it built on).
Documents are canonically encoded (:func:`check_state`), so "the same document" is a string
comparison.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from backend.runtime.records import SessionState
from backend.runtime.state_schema import DEFAULT_MAX_STATE_BYTES, apply_changes, check_state
from backend.runtime.store import RuntimeStore


class SessionStateStore:
    """Versioned, bounded, validated working memory of the conversations of one file."""

    def __init__(
        self,
        store: RuntimeStore,
        *,
        max_bytes: int = DEFAULT_MAX_STATE_BYTES,
        clock: Callable[[], int],
    ) -> None:
        self._store = store
        self.max_bytes = max_bytes
        self._clock = clock

    def get(self, conversation_id: str) -> SessionState:
        return self._store.load_state(conversation_id)

    def put(
        self,
        conversation_id: str,
        *,
        expected_version: int,
        state: dict[str, Any],
        schema: dict[str, Any] | None = None,
    ) -> SessionState:
        encoded = check_state(state, schema, max_bytes=self.max_bytes)
        return self._store.put_state(conversation_id, expected_version, encoded, self._clock())

    def open(self, conversation_id: str, schema: dict[str, Any] | None) -> SessionStateHandle:
        """A run's handle, pinned to the version read now (claim time)."""
        return SessionStateHandle(self, conversation_id, self.get(conversation_id), schema)


class SessionStateHandle:
    """A run's typed view of session state: read at claim, proposals staged, one commit."""

    def __init__(
        self,
        states: SessionStateStore,
        conversation_id: str,
        snapshot: SessionState,
        schema: dict[str, Any] | None,
    ) -> None:
        self._states = states
        self.conversation_id = conversation_id
        self.snapshot = snapshot
        self.schema = schema
        self._staged: dict[str, Any] | None = None

    @property
    def version(self) -> int:
        """The version this run read at claim time (its ``expected_version``)."""
        return self.snapshot.version

    @property
    def data(self) -> dict[str, Any]:
        """The document as this run sees it (staged changes included); a copy."""
        return copy.deepcopy(self._staged if self._staged is not None else self.snapshot.data)

    @property
    def dirty(self) -> bool:
        return self._staged is not None

    def propose(
        self, *, set_values: dict[str, Any] | None = None, remove: list[str] | None = None
    ) -> dict[str, Any]:
        """Validate and stage a change; raise (and stage nothing) if the result is invalid."""
        candidate = apply_changes(self.data, set_values, remove)
        check_state(candidate, self.schema, max_bytes=self._states.max_bytes)
        self._staged = candidate
        return copy.deepcopy(candidate)

    def commit(self) -> SessionState | None:
        """Write the staged document at the claimed version (call inside the turn's transaction)."""
        if self._staged is None:
            return None
        committed = self._states.put(
            self.conversation_id,
            expected_version=self.snapshot.version,
            state=self._staged,
            schema=self.schema,
        )
        self.snapshot, self._staged = committed, None
        return committed
