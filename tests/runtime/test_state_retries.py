"""A session-state write retried after an unknown outcome (issue 26: "a retried
compare-and-set must not fail falsely"), on both engines.

A commit can land while its acknowledgement is lost (the connection drops during ``COMMIT``, a
failover). The writer cannot tell, so it retries the same call; the compare-and-set is
idempotent for that call (``backend.runtime.state``, "Retries").
"""

from __future__ import annotations

import pytest

from backend.errors import StaleVersionError, StorageError
from backend.runtime import SessionStateStore
from backend.runtime.records import SessionState
from backend.runtime.store import RuntimeStore


@pytest.fixture
def states(store):
    return SessionStateStore(store, clock=lambda: 5)


def _lose_acknowledgement() -> None:
    raise StorageError("connection lost during COMMIT (outcome unknown)")


def _put_losing_the_acknowledgement(
    store: RuntimeStore, states: SessionStateStore, expected: int, document: dict
) -> SessionState:
    """``put`` whose commit lands but whose caller hears an error instead of the result."""
    with store.db.transaction():
        store.db.after_commit(_lose_acknowledgement)
        return states.put("c1", expected_version=expected, state=document)


class TestARetriedCompareAndSet:
    def test_a_write_that_landed_but_was_not_acknowledged_succeeds_when_retried(
        self, store, states
    ):
        with pytest.raises(StorageError, match="outcome unknown"):
            _put_losing_the_acknowledgement(store, states, 0, {"step": 1})
        retried = states.put("c1", expected_version=0, state={"step": 1})
        assert (retried.version, retried.data) == (1, {"step": 1})
        assert states.get("c1") == retried
        assert store.load_conversation("c1").session_state_version == 1  # bumped once

    def test_a_write_that_did_not_land_is_written_by_the_retry(self, store, states):
        def fail_before_commit() -> None:
            with store.db.transaction():
                states.put("c1", expected_version=0, state={"step": 1})
                raise StorageError("connection lost before COMMIT")

        with pytest.raises(StorageError):
            fail_before_commit()
        assert states.get("c1").version == 0
        assert states.put("c1", expected_version=0, state={"step": 1}).version == 1

    def test_retrying_twice_more_still_answers_the_same_state(self, states):
        first = states.put("c1", expected_version=0, state={"step": 1, "todo": ["a"]})
        again = [
            states.put("c1", expected_version=0, state={"todo": ["a"], "step": 1}) for _ in range(2)
        ]
        assert again == [first, first]  # key order aside, the same document: one write
        assert states.get("c1").version == 1

    def test_a_different_document_at_the_same_version_is_still_stale(self, states):
        states.put("c1", expected_version=0, state={"step": 1})
        with pytest.raises(StaleVersionError) as caught:
            states.put("c1", expected_version=0, state={"step": 2})
        assert (caught.value.expected_version, caught.value.actual_version) == (0, 1)
        assert states.get("c1").data == {"step": 1}

    def test_a_retry_after_another_write_landed_since_is_stale(self, states):
        states.put("c1", expected_version=0, state={"step": 1})
        states.put("c1", expected_version=1, state={"step": 2})
        with pytest.raises(StaleVersionError) as caught:
            states.put("c1", expected_version=0, state={"step": 1})
        assert caught.value.actual_version == 2
        assert states.get("c1").data == {"step": 2}
